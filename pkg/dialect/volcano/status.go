package volcano

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// Reasons of the conditions Status writes beside Volcano's own.
const (
	// ReasonScheduled is the Scheduled condition's reason once minMember
	// members hold nodes.
	ReasonScheduled = "Scheduled"
	// ReasonAdmitted is the Unschedulable condition's reason (False)
	// once the gang is admitted and waits only for its pods.
	ReasonAdmitted = "Inqueue"
)

// Status returns the status a Volcano PodGroup should have, as Volcano's
// closeSession (jobStatus) writes it: the phase is Running once minMember
// members are allocated (placed or finished), Completed when every one of
// those succeeded, Unknown when some run but the gang cannot be placed
// whole, else Inqueue while admitted and Pending before. Volcano's job
// controller creates a job's pods only once its PodGroup is Inqueue, so
// writing Inqueue on admission is what lets those pods exist at all.
// Conditions: Unschedulable (True, NotEnoughResources, with the reason
// while the gang is refused or its members find no node; False once
// admitted and merely waiting for its pods, and once scheduled) and
// Scheduled. A
// condition changes, with its lastTransitionTime, only when its status,
// reason or message does, so an unchanged gang is not written again.
func Status(prev vc.PodGroupStatus, p groupspec.Progress, now time.Time) vc.PodGroupStatus {
	if prev.Phase == vc.PodGroupCompleted && p.Members == 0 {
		// Its pods are gone (garbage-collected, or a restarted scheduler
		// has not seen them): what it completed stays written.
		return prev
	}
	out := *prev.DeepCopy()
	allocated := p.Placed + p.Succeeded + p.Failed
	ready := p.MinMember > 0 && allocated >= int(p.MinMember) || p.MinMember <= 0 && p.Admitted && allocated > 0
	switch {
	case ready && p.Succeeded == allocated:
		out.Phase = vc.PodGroupCompleted
	case ready:
		out.Phase = vc.PodGroupRunning
	case p.Running > 0 && p.Why != "":
		out.Phase = vc.PodGroupUnknown
	case p.Admitted:
		out.Phase = vc.PodGroupInqueue
	default:
		out.Phase = vc.PodGroupPending
	}
	out.Running, out.Succeeded, out.Failed = int32(p.Running), int32(p.Succeeded), int32(p.Failed)
	t := metav1.NewTime(now.Truncate(time.Second))
	switch {
	case ready:
		out.Conditions = setCondition(out.Conditions, vc.PodGroupCondition{Type: vc.PodGroupScheduled, Status: v1.ConditionTrue,
			Reason: ReasonScheduled, Message: string(vc.PodGroupReady)}, t)
		out.Conditions = setCondition(out.Conditions, vc.PodGroupCondition{Type: vc.PodGroupUnschedulableType, Status: v1.ConditionFalse,
			Reason: ReasonScheduled, Message: string(vc.PodGroupReady)}, t)
	case p.Why != "":
		out.Conditions = setCondition(out.Conditions, vc.PodGroupCondition{Type: vc.PodGroupUnschedulableType, Status: v1.ConditionTrue,
			Reason: vc.NotEnoughResourcesReason, Message: p.Why}, t)
	case p.Admitted:
		// Admitted, waiting for its controller to create or place its
		// pods: nothing is wrong. Volcano's job controller turns the
		// newest True condition other than Scheduled into a Warning
		// Event on the job at every sync, so a refusal written while the
		// gang was pending is put to False, not left standing.
		out.Conditions = clearCondition(out.Conditions, vc.PodGroupUnschedulableType, ReasonAdmitted, t)
	}
	return out
}

// clearCondition sets the condition of type typ, if present and True, to
// False with reason.
func clearCondition(conds []vc.PodGroupCondition, typ vc.PodGroupConditionType, reason string, now metav1.Time) []vc.PodGroupCondition {
	i := slices.IndexFunc(conds, func(o vc.PodGroupCondition) bool { return o.Type == typ })
	if i < 0 || conds[i].Status != v1.ConditionTrue {
		return conds
	}
	return setCondition(conds, vc.PodGroupCondition{Type: typ, Status: v1.ConditionFalse, Reason: reason}, now)
}

// setCondition puts c into conds in place of the condition of its type,
// keeping the old one (and its time) when nothing but the time differs.
func setCondition(conds []vc.PodGroupCondition, c vc.PodGroupCondition, now metav1.Time) []vc.PodGroupCondition {
	i := slices.IndexFunc(conds, func(o vc.PodGroupCondition) bool { return o.Type == c.Type })
	if i >= 0 {
		o := conds[i]
		if o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
			return conds
		}
		c.LastTransitionTime = now
		conds[i] = c
		return conds
	}
	c.LastTransitionTime = now
	return append(conds, c)
}
