package admission

import (
	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// Two kinds of refusal. A quota refusal (the queue's capability or deserved
// share, a closed or missing queue, a namespace ResourceQuota, members
// missing, the queue held for its head) is cured by nothing a new node
// brings: its pods stay out of the scheduling queue (PreEnqueue) with the
// named reason. A capacity refusal (no room in the cluster, members that
// cannot be placed together on today's nodes, a queue whose capability
// is bounded by the cluster's size) is what a cluster autoscaler exists
// for, and autoscalers act only on pods that a scheduling cycle marked
// PodScheduled=False, reason Unschedulable. So the pods of a unit refused
// for capacity go through PreEnqueue, all its minimum members at once (a
// scale-up is sized for the whole gang), and CalderaGang's PreFilter
// rejects them while the unit is not admitted: the gang holds nothing, no
// member waits in Permit for nodes that may never come, and the admission
// pass, in queue order, still decides who gets new room first. Which
// refusals are which is policy: queue.Decision.WaitsForRoom.

// noteRefusalsLocked records, for the units refused in this pass, whether
// they wait for room (a capacity refusal), and returns the pods of those
// that just started to: PreEnqueue now lets them through, but they wait in
// the scheduler's unschedulable pods until moved. O(refused units).
func (a *State) noteRefusalsLocked(refused []queue.Outcome) map[string]*v1.Pod {
	var act map[string]*v1.Pod
	for _, o := range refused {
		u := a.Units[o.Group.Key]
		if u == nil {
			continue
		}
		if !o.Decision.WaitsForRoom() {
			u.roomVerdict = nil
			continue
		}
		started := !u.WaitsForRoom()
		if started {
			u.roomVerdict = new(queue.Decision)
		}
		*u.roomVerdict = o.Decision
		if !started {
			continue
		}
		if act == nil {
			act = map[string]*v1.Pod{}
		}
		a.unitPendingPodsLocked(u, act)
	}
	return act
}

// unitPendingPodsLocked adds to act u's pods that wait for a node.
func (a *State) unitPendingPodsLocked(u *Unit, act map[string]*v1.Pod) {
	if u.Gang != nil {
		if u.Gang.Enqueueable {
			for k, p := range u.Gang.PendingPodsLocked() {
				act[k] = p
			}
		}
	} else if u.Pod.Spec.NodeName == "" {
		act[u.Pod.Namespace+"/"+u.Pod.Name] = u.Pod
	}
}

// AdmissionHoldLocked is why PreFilter holds pod for admission: its unit refused
// for capacity (PreFilterAwaitingRoom, the verdict autoscalers act on), or
// not admitted for another reason (PreFilterNotAdmitted, with why);
// PreFilterOK when admission lets it through, or runs none for pod's
// profile (CalderaGang may serve profiles CalderaEnqueue does not). O(1).
func (a *State) AdmissionHoldLocked(pod *v1.Pod, groups map[gangbook.GroupKey]*gangbook.Group) (PreFilterCode, string) {
	if !a.On() || !a.Ours(pod) {
		return PreFilterOK, ""
	}
	ok, msg, u := a.AdmittedLocked(pod, groups)
	if ok {
		return PreFilterOK, ""
	}
	if waits, why := a.AwaitingRoomLocked(u); waits {
		return PreFilterAwaitingRoom, why
	}
	return PreFilterNotAdmitted, msg
}

// AwaitingRoomLocked reports whether u (nil for none) is refused for
// capacity and not admitted, with the verdict: CalderaGang's PreFilter then
// rejects its pods as Unschedulable, which an autoscaler acts on. O(1).
func (a *State) AwaitingRoomLocked(u *Unit) (bool, string) {
	if u == nil || u.Admitted || !u.WaitsForRoom() {
		return false, ""
	}
	// The verdict of the last pass; between passes, after an event sent the
	// unit back to be decided afresh, the last one that waited for room:
	// the scheduler writes it into the pod's condition, where it stays
	// until the pod's next cycle.
	d, ok := a.Pending.Decision(u.Key)
	if !ok || d.Check == queue.CheckNone {
		d = *u.roomVerdict
	}
	return true, "waiting for room: " + a.decisionMessage(u, d)
}

// UnitOfLocked returns pod's admission unit, nil without admission or
// without one; key and member are GroupKeyOf(pod), which the caller has.
func (a *State) UnitOfLocked(pod *v1.Pod, key gangbook.GroupKey, member bool) *Unit {
	if !a.On() || !a.Ours(pod) {
		return nil
	}
	if member {
		return a.Units[GangUnitKey(key)]
	}
	return a.Units[PodUnitKey(pod)]
}

// WaitsForRoom reports whether u's last refusal was for capacity.
func (u *Unit) WaitsForRoom() bool { return u.roomVerdict != nil }
