package admission

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// PreemptorUnitLocked is pod's admission unit: its gang's, or its own.
func (a *State) PreemptorUnitLocked(pod *v1.Pod) *Unit {
	if key, ok := gangbook.GroupKeyOf(pod); ok {
		return a.Units[GangUnitKey(key)]
	}
	return a.Units[PodUnitKey(pod)]
}

// PreemptorLocked describes pod's group, one of groups, as a preemptor.
func (a *State) PreemptorLocked(groups map[gangbook.GroupKey]*gangbook.Group, pod *v1.Pod) (reclaim.Preemptor, bool, string) {
	first := convert.PodRequest(pod)
	key, labelled := gangbook.GroupKeyOf(pod)
	if !labelled {
		u := a.Units[PodUnitKey(pod)]
		if u == nil {
			if a.Opts.AdmitSingletons {
				return reclaim.Preemptor{}, false, "the pod is not known to its queue yet"
			}
			// Singletons bypass queues: they may only preempt within the
			// queue they would resolve to.
			q, _ := a.resolveQueueLocked("", pod, pod.Namespace)
			return reclaim.Preemptor{Queue: q, Priority: gangbook.PodPriority(pod), Members: []resources.List{first}}, true, ""
		}
		if !u.Admitted {
			return reclaim.Preemptor{}, false, "the pod is not admitted to queue " + u.Queue
		}
		return reclaim.Preemptor{Queue: u.Queue, Priority: u.Priority, Members: []resources.List{first}}, true, ""
	}
	uk := GangUnitKey(key)
	u, g := a.Units[uk], groups[key]
	if u == nil || g == nil {
		return reclaim.Preemptor{}, false, "the pod's PodGroup is not known yet"
	}
	if !u.Admitted {
		return reclaim.Preemptor{}, false, "the PodGroup is not admitted to queue " + u.Queue
	}
	pre := reclaim.Preemptor{Group: uk.String(), Queue: u.Queue, Priority: u.Priority,
		Members: []resources.List{first}, MemberIDs: []string{string(pod.UID)}}
	// The gang needs minMember members placed; the pod is one, the rest
	// come from its siblings that hold no node (reclaim.PickSiblings picks
	// which count). Siblings bound, or reserved and waiting in Permit, are
	// on their nodes in the scheduler's snapshot already: counted again as
	// members to place, their room would be asked for twice.
	if need := int(u.Min) - g.Counts.Placed - 1; need > 0 {
		var rest []resources.List
		var uids []types.UID
		for uid, m := range g.Members {
			if uid != pod.UID && m.Node() == "" && !m.State.Phase.Terminal() {
				rest = append(rest, m.Request)
				uids = append(uids, uid)
			}
		}
		for _, i := range reclaim.PickSiblings(rest, need) {
			pre.Members = append(pre.Members, rest[i])
			pre.MemberIDs = append(pre.MemberIDs, string(uids[i]))
		}
	}
	return pre, true, ""
}
