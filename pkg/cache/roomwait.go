package cache

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
func (a *admissionState) noteRefusalsLocked(refused []queue.Outcome) map[string]*v1.Pod {
	var act map[string]*v1.Pod
	for _, o := range refused {
		u := a.units[o.Group.Key]
		if u == nil {
			continue
		}
		if !o.Decision.WaitsForRoom() {
			u.roomVerdict = nil
			continue
		}
		started := !u.waitsForRoom()
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
func (a *admissionState) unitPendingPodsLocked(u *unit, act map[string]*v1.Pod) {
	if u.gang != nil {
		if u.gang.Enqueueable {
			for k, p := range u.gang.PendingPodsLocked() {
				act[k] = p
			}
		}
	} else if u.pod.Spec.NodeName == "" {
		act[u.pod.Namespace+"/"+u.pod.Name] = u.pod
	}
}

// MayEnqueue answers CalderaEnqueue's PreEnqueue: whether pod may enter the
// scheduling queue, else why not. It may when its unit is admitted
// (Admitted) or refused for capacity: then a scheduling cycle marks it
// Unschedulable (PreFilterAwaitingRoom), which autoscalers act on.
func (c *Cache) MayEnqueue(pod *v1.Pod) (bool, string) {
	c.markQueueSeen()
	c.mu.RLock()
	defer c.mu.RUnlock()
	ok, msg, u := c.adm.admittedLocked(pod, c.groups)
	if ok || (u != nil && !u.admitted && u.waitsForRoom()) {
		return true, ""
	}
	return false, msg
}

// admissionHoldLocked is why PreFilter holds pod for admission: its unit refused
// for capacity (PreFilterAwaitingRoom, the verdict autoscalers act on), or
// not admitted for another reason (PreFilterNotAdmitted, with why);
// PreFilterOK when admission lets it through, or runs none for pod's
// profile (CalderaGang may serve profiles CalderaEnqueue does not). O(1).
func (a *admissionState) admissionHoldLocked(pod *v1.Pod, groups map[gangbook.GroupKey]*gangbook.Group) (PreFilterCode, string) {
	if !a.on() || !a.ours(pod) {
		return PreFilterOK, ""
	}
	ok, msg, u := a.admittedLocked(pod, groups)
	if ok {
		return PreFilterOK, ""
	}
	if waits, why := a.awaitingRoomLocked(u); waits {
		return PreFilterAwaitingRoom, why
	}
	return PreFilterNotAdmitted, msg
}

// awaitingRoomLocked reports whether u (nil for none) is refused for
// capacity and not admitted, with the verdict: CalderaGang's PreFilter then
// rejects its pods as Unschedulable, which an autoscaler acts on. O(1).
func (a *admissionState) awaitingRoomLocked(u *unit) (bool, string) {
	if u == nil || u.admitted || !u.waitsForRoom() {
		return false, ""
	}
	// The verdict of the last pass; between passes, after an event sent the
	// unit back to be decided afresh, the last one that waited for room:
	// the scheduler writes it into the pod's condition, where it stays
	// until the pod's next cycle.
	d, ok := a.pending.Decision(u.key)
	if !ok || d.Check == queue.CheckNone {
		d = *u.roomVerdict
	}
	return true, "waiting for room: " + a.decisionMessage(u, d)
}

// unitOfLocked returns pod's admission unit, nil without admission or
// without one; key and member are GroupKeyOf(pod), which the caller has.
func (a *admissionState) unitOfLocked(pod *v1.Pod, key gangbook.GroupKey, member bool) *unit {
	if !a.on() || !a.ours(pod) {
		return nil
	}
	if member {
		return a.units[gangUnitKey(key)]
	}
	return a.units[podUnitKey(pod)]
}

// waitsForRoom reports whether u's last refusal was for capacity.
func (u *unit) waitsForRoom() bool { return u.roomVerdict != nil }
