// Package upstream adapts Kubernetes' own gang API (scheduling.k8s.io/v1beta1
// PodGroup, feature gate GenericWorkload) to Caldera's group spec
// (pkg/groupspec), and Caldera's decisions back to conditions on that
// PodGroup. The cache, admission, fair share, reclaim and placement never
// see an upstream type: an upstream PodGroup enters the cache as a
// groupspec.Spec. Upstream leaves queues and
// fairness out of scope on purpose; Caldera adds them. It holds no state and
// makes no API call. docs/gang-apis.md maps the fields.
package upstream

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	sched "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// APIVersion is upstream's scheduling API.
var APIVersion = sched.SchemeGroupVersion.String()

// GroupName returns the upstream PodGroup pod joins
// (spec.schedulingGroup.podGroupName), if it names one.
func GroupName(pod *v1.Pod) (string, bool) {
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return *sg.PodGroupName, true
	}
	return "", false
}

// MinCount is the number of members that must be placed together: the
// gang policy's minCount, or 1 for the basic policy (and for a PodGroup
// naming neither, which validation does not admit), whose members are
// scheduled one by one.
func MinCount(in *sched.PodGroup) int32 {
	if g := in.Spec.SchedulingPolicy.Gang; g != nil {
		return g.MinCount
	}
	return 1
}

// Spec reads an upstream PodGroup as Caldera's group spec: minMember from
// MinCount (a basic PodGroup becomes a group of minMember 1: admitted to
// its queue by its first member, with every further member an extra placed
// within the queue's share one by one, pkg/admission/extrademand.go, and no
// barrier); the queue from Caldera's queue label, as on any PodGroup, else
// its namespace's default applies; admitted when Caldera's admitted-at
// annotation says so; disruptionMode all as Rules.DisruptAll. priority and
// priorityClassName are for display only: the API server's priority
// admission sets the same class on the members, and Caldera orders and
// preempts by the members' priority.
func Spec(in *sched.PodGroup) *groupspec.Spec {
	out := &groupspec.Spec{
		Source: groupspec.Source{
			Dialect: groupspec.Upstream, APIVersion: APIVersion,
			Namespace: in.Namespace, Name: in.Name, UID: string(in.UID),
			ResourceVersion: in.ResourceVersion, Created: in.CreationTimestamp.Time,
		},
		Gang:              gang.Spec{MinMember: MinCount(in)},
		Queue:             in.Labels[qapi.QueueLabel],
		PriorityClassName: in.Spec.PriorityClassName,
		Admitted:          qapi.AdmittedSince(in.Annotations, in.CreationTimestamp.Time),
		Annotations:       in.Annotations,
	}
	if d := in.Spec.DisruptionMode; d != nil && d.All != nil {
		out.Rules.DisruptAll = true
	}
	return out
}

// Condition types Caldera writes on an upstream PodGroup, beside
// upstream's own (PodGroupInitiallyScheduled, DisruptionTarget), which it
// never writes: they are the scheduler's and the disruption controller's,
// and a Caldera-qualified type cannot be taken for one of them.
const (
	// ConditionAdmitted is True once the PodGroup's queue admitted it, False
	// with the admission check that refused it while it waits.
	ConditionAdmitted = qapi.GroupName + "/Admitted"
	// ConditionWaiting is True while an admitted gang waits for something
	// other than its queue (its members, a placement), False otherwise.
	ConditionWaiting = qapi.GroupName + "/Waiting"
)

// Reasons of the conditions Conditions writes.
const (
	ReasonAdmitted    = "Admitted"
	ReasonNotAdmitted = "NotAdmitted"
	ReasonWaiting     = "Waiting"
	ReasonPlaced      = "Placed"
)

// Conditions returns prev with Caldera's two conditions set from p; every
// other condition (upstream's among them) is kept as it is. An admitted
// gang with nothing else stopping it and fewer than minCount members waits
// for them. A condition
// changes, with its lastTransitionTime, only when its status, reason or
// message does (meta.SetStatusCondition), so an unchanged gang is not
// written again.
func Conditions(prev []metav1.Condition, p groupspec.Progress, generation int64, now metav1.Time) []metav1.Condition {
	if p.Why == "" && p.Members < int(p.MinMember) {
		p.Why = fmt.Sprintf("waiting for minCount %d members, %d exist", p.MinMember, p.Members)
	}
	out := make([]metav1.Condition, len(prev))
	for i := range prev {
		prev[i].DeepCopyInto(&out[i])
	}
	admitted := metav1.Condition{Type: ConditionAdmitted, Status: metav1.ConditionTrue, Reason: ReasonAdmitted,
		Message: "admitted to its queue", ObservedGeneration: generation, LastTransitionTime: now}
	waiting := metav1.Condition{Type: ConditionWaiting, Status: metav1.ConditionFalse, Reason: ReasonPlaced,
		Message: "nothing holds the gang", ObservedGeneration: generation, LastTransitionTime: now}
	switch {
	case !p.Admitted:
		admitted.Status, admitted.Reason, admitted.Message = metav1.ConditionFalse, ReasonNotAdmitted, orDefault(p.Why, "waiting for its queue")
		waiting.Status, waiting.Reason, waiting.Message = metav1.ConditionTrue, ReasonNotAdmitted, admitted.Message
	case p.Why != "":
		waiting.Status, waiting.Reason, waiting.Message = metav1.ConditionTrue, ReasonWaiting, p.Why
	}
	meta.SetStatusCondition(&out, admitted)
	meta.SetStatusCondition(&out, waiting)
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
