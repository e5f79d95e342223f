package admission

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// PodAcct remembers how one unfinished pod was counted, so that its update or
// deletion subtracts exactly that.
type PodAcct struct {
	Unit  queue.Key
	Queue string
	Req   resources.List
	Bound bool
	// unlimited: bound without a run-time limit, counted in the estimated
	// room (estimate.go).
	unlimited bool
	// FollowsNS: the queue was resolved without a unit for a pod with no
	// queue label of its own, so it is the namespace's (or the default);
	// such accounts are indexed in nsPods and move when the label does.
	FollowsNS bool
	// Prio is the pod's priority, for the per-priority allocated amounts.
	Prio int32
	// Slot is the account's index in UnitPods[unit].
	Slot int32
	// Node is the node a bound pod is on (its room in FeasibleState).
	Node string
	// The queue the pod's labels name when no Queue has that name is
	// State.AskedOf's, not a field: most accounts have none.
}

// AskedOf is the queue p's pod names when no Queue has that name (p is then
// charged to MissingQueue), else "".
func (a *State) AskedOf(p *PodAcct) string { return a.asked[p] }

// setAskedLocked records q as the queue p's pod asks for ("" for none).
func (a *State) setAskedLocked(p *PodAcct, q string) {
	if q == "" {
		delete(a.asked, p)
		return
	}
	if a.asked == nil {
		a.asked = map[*PodAcct]string{}
	}
	a.asked[p] = q
}

// queueUsage is one queue's allocated and inflight amounts.
type queueUsage struct {
	Allocated, Inflight resources.List
	// Counts are its units by state (queuecounts.go).
	Counts QueueCounts
}

// soloSlot is the Slot of a solo account: a singleton's own, which its
// unit finds through its pod (soloLocked) rather than in UnitPods. Not
// listed, a singleton needs no UnitPods entry (a map slot and a list), and
// a restart accounts one per bound singleton.
const soloSlot = -1

// indexPodLocked records that p is accounted to p.unit. O(1). solo: p is
// its unit's pod's account (a singleton's own), and is not listed.
func (a *State) indexPodLocked(p *PodAcct, solo bool) {
	if p.Unit.IsZero() {
		return
	}
	if solo {
		p.Slot = soloSlot
		return
	}
	l := a.UnitPods[p.Unit]
	p.Slot = int32(len(l))
	a.UnitPods[p.Unit] = append(l, p)
}

// unindexPodLocked forgets that p is accounted to p.unit, moving the last
// account of the unit into its slot. O(1). The list of a unit that exists
// is kept even when empty, so that a pod's next event does not allocate it
// again.
func (a *State) unindexPodLocked(p *PodAcct) {
	if p.Slot == soloSlot {
		return
	}
	l := a.UnitPods[p.Unit]
	if p.Unit.IsZero() || int(p.Slot) >= len(l) || l[p.Slot] != p {
		return
	}
	last := l[len(l)-1]
	l[p.Slot], last.Slot = last, p.Slot
	l[len(l)-1] = nil
	l = l[:len(l)-1]
	if len(l) == 0 && a.Units[p.Unit] == nil {
		delete(a.UnitPods, p.Unit)
		return
	}
	a.UnitPods[p.Unit] = l
}

// soloLocked is u's pod's account when it is u's solo account (not
// listed in UnitPods), else nil. O(1).
func (a *State) soloLocked(u *Unit) *PodAcct {
	if u.Gang != nil || u.Pod == nil {
		return nil
	}
	if p := a.Pods[u.Pod.UID]; p != nil && p.Slot == soloSlot && p.Unit == u.Key {
		return p
	}
	return nil
}

// listSoloLocked lists u's solo account in UnitPods, as any other: u is
// dropped, or taken over by a pod of the same name with another uid, while
// the account stays accounted to u's key, so u's pod no longer finds it.
func (a *State) listSoloLocked(u *Unit) {
	if p := a.soloLocked(u); p != nil {
		a.indexPodLocked(p, false)
	}
}

// indexNSLocked records that pod uid's account follows namespace ns.
func (a *State) indexNSLocked(ns string, uid types.UID, p *PodAcct) {
	m := a.nsPods[ns]
	if m == nil {
		m = map[types.UID]*PodAcct{}
		a.nsPods[ns] = m
	}
	m[uid] = p
}

// unindexNSLocked forgets that pod uid's account follows namespace ns.
func (a *State) unindexNSLocked(ns string, uid types.UID) {
	m := a.nsPods[ns]
	delete(m, uid)
	if len(m) == 0 {
		delete(a.nsPods, ns)
	}
}

// moveAcctLocked moves one pod's account, with what it holds, to queue q.
// Accounts of a unit move with it (moveUnitLocked); this is for the others.
func (a *State) moveAcctLocked(p *PodAcct, q string) {
	if p.Queue == q {
		return
	}
	if p.Bound {
		if old := a.Usage[p.Queue]; old != nil && p.Queue != "" {
			old.Allocated.Sub(p.Req)
		}
		if q != "" {
			a.usageLocked(q).Allocated.Add(p.Req)
		}
	}
	a.retagLocked(p, q)
}

// retagLocked moves one pod's accounting to queue q.
func (a *State) retagLocked(p *PodAcct, q string) {
	if p.Bound {
		a.prioLocked(p.Queue, p.Prio, p.Req, -1)
		a.prioLocked(q, p.Prio, p.Req, 1)
		a.Feas.Rooms.Requeue(p.Node, p.Queue, q, p.Req)
		a.Est.Requeue(p, q)
		switch {
		case p.Queue == "" && q != "":
			a.Outside.Sub(p.Req)
		case p.Queue != "" && q == "":
			a.Outside.Add(p.Req)
		}
	}
	p.Queue = q
}

// prioLocked adds (sign 1) or subtracts (-1) req at queue and priority.
func (a *State) prioLocked(queue string, prio int32, req resources.List, sign int) {
	if queue == "" {
		return
	}
	m := a.ByPrio[queue]
	if m == nil {
		m = map[int32]resources.List{}
		a.ByPrio[queue] = m
	}
	if sign > 0 {
		m[prio] = m[prio].Add(req)
		return
	}
	l := m[prio].Sub(req)
	if l.IsZero() {
		delete(m, prio)
	} else {
		m[prio] = l
	}
}

// preemptibleLocked is what bound pods of queue with a priority below prio
// request: admission's room for preemption within the queue.
func (a *State) preemptibleLocked(queue string, prio int32) resources.List {
	out := resources.List{}
	for p, l := range a.ByPrio[queue] {
		if p < prio {
			out.Add(l)
		}
	}
	return out
}

func (a *State) usageLocked(q string) *queueUsage {
	u := a.Usage[q]
	if u == nil {
		u = &queueUsage{Allocated: resources.List{}, Inflight: resources.List{}}
		a.Usage[q] = u
		if _, ok := a.Sorting[q]; !ok {
			a.Sorting[q] = queueSort{}
		}
	}
	return u
}

// unaccountLocked takes pod's previous account old out of every aggregate
// and index, and returns the pods to activate when it held room: freed
// room may admit the units refused for a capability deficit. O(1).
func (a *State) unaccountLocked(pod *v1.Pod, old *PodAcct) (act map[string]*v1.Pod) {
	if old.Bound {
		a.Est.Unbind(old)
		a.Used.Sub(old.Req)
		a.Feas.Rooms.Bind(old.Node, old.Queue, old.Req, -1)
		if q := a.Usage[old.Queue]; q != nil {
			q.Allocated.Sub(old.Req)
		}
		if old.Queue == "" {
			a.Outside.Sub(old.Req)
		}
		a.prioLocked(old.Queue, old.Prio, old.Req, -1)
		if u := a.Units[old.Unit]; u != nil {
			u.Release(old.Req)
			a.setInflightLocked(u)
		}
		a.KickLocked() // room was freed
		act = a.takeDeficitRefusedLocked()
		a.clearFreeRoomOnlyLocked()
	}
	a.unindexPodLocked(old)
	a.setAskedLocked(old, "")
	if old.FollowsNS {
		a.unindexNSLocked(pod.Namespace, pod.UID)
	}
	delete(a.Pods, pod.UID)
	return act
}

// singletonOfLocked reports whether pod is admitted as a group of one; a
// singleton that joined a PodGroup through its label loses its unit, its
// gang being admitted instead. O(1).
func (a *State) singletonOfLocked(pod *v1.Pod, labelled bool, old *PodAcct) bool {
	if !labelled && a.Opts.AdmitSingletons && a.Ours(pod) {
		return true
	}
	// Its unit exists only while its account names it, so members already
	// accounted as such skip the lookup.
	if a.Opts.AdmitSingletons && (old == nil || old.Unit.Kind == queue.KindPod) {
		if u := a.Units[PodUnitKey(pod)]; u != nil && u.Gang == nil && u.Pod.UID == pod.UID {
			a.dropUnitLocked(u)
		}
	}
	return false
}

// singletonUnitLocked creates or refreshes the unit of singleton pod,
// accounted as acct: its queue, priority, request, and whether it waits for
// admission. O(1).
func (a *State) singletonUnitLocked(pod *v1.Pod, acct *PodAcct) {
	u := a.Units[acct.Unit]
	if u == nil {
		u = &Unit{Key: acct.Unit, Pod: pod, Members: 1, Min: 1}
		a.Units[acct.Unit] = u
	}
	if u.Pod.UID != pod.UID {
		a.listSoloLocked(u)
	}
	u.Pod = pod
	q, asked := a.resolveQueueLocked("", pod, pod.Namespace)
	u.Asked = asked
	a.moveUnitLocked(u, q)
	u.Priority, u.created = gangbook.PodPriority(pod), pod.CreationTimestamp.Time
	if !u.Request.Equal(acct.Req) {
		// Resized: an admitted singleton reserves what it asks now.
		u.Request = acct.Req
		a.setInflightLocked(u)
	}
	if acct.Bound && !u.Admitted {
		// Bound without us (a restart): it holds what it holds.
		u.Admitted = true
		a.Pending.Delete(u.Key)
	}
	if !u.Admitted {
		a.setPendingLocked(u)
		a.KickLocked()
	}
}

// holdLocked adds bound account acct to every aggregate: the cluster's, its
// node's, its queue's (or what is held outside the queues) and its unit's.
// O(1).
func (a *State) holdLocked(acct *PodAcct) {
	a.Used.Add(acct.Req)
	a.Feas.Rooms.Bind(acct.Node, acct.Queue, acct.Req, 1)
	if acct.Queue != "" {
		a.usageLocked(acct.Queue).Allocated.Add(acct.Req)
		a.prioLocked(acct.Queue, acct.Prio, acct.Req, 1)
	} else {
		a.Outside.Add(acct.Req)
	}
	if u := a.Units[acct.Unit]; u != nil {
		u.Hold(acct.Req)
		a.setInflightLocked(u)
	}
}

// AccountPodLocked accounts an unfinished pod for admission (finished or
// deleted pods are taken out, and left reports that one was): what nodes
// hold, per queue and in all, and the singletons waiting for admission.
// pod's GroupKeyOf is gk and labelled; group is its group's annotations
// (run-time limits), request computes its request given the previous one
// (the cache's interner). O(1), plus the units refused for a capability
// deficit when a bound pod leaves.
func (a *State) AccountPodLocked(pod *v1.Pod, gk gangbook.GroupKey, labelled, deleted bool, group map[string]string,
	request func(pod *v1.Pod, old resources.List) resources.List, now time.Time) (act map[string]*v1.Pod, left bool) {
	a.trackNominationLocked(pod, deleted)
	finished := pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
	if pod.Spec.NodeName != "" || deleted || finished {
		// Bound (added to allocated below, under the same lock) or gone.
		a.Extras.Drop(pod.UID)
	}
	old := a.Pods[pod.UID]
	if old != nil {
		act = a.unaccountLocked(pod, old)
	}
	singleton := a.singletonOfLocked(pod, labelled, old)
	if deleted || finished {
		a.learnRunLocked(pod, old, now)
		a.trackEndLocked(pod, nil, nil)
		if singleton {
			if u := a.Units[PodUnitKey(pod)]; u != nil {
				a.dropUnitLocked(u)
			}
		}
		return act, true
	}
	// The pod's previous account is rewritten in place: a bind or unbind is
	// then free of allocations (no new account, key or request list).
	acct, oldReq := old, resources.List(nil)
	if acct == nil {
		acct = &PodAcct{}
	} else {
		oldReq = old.Req
	}
	*acct = PodAcct{Req: request(pod, oldReq), Bound: pod.Spec.NodeName != "", Prio: gangbook.PodPriority(pod), Node: pod.Spec.NodeName}
	if labelled && a.Ours(pod) {
		acct.Unit = GangUnitKey(gk)
	} else if singleton {
		acct.Unit = PodUnitKey(pod)
		a.singletonUnitLocked(pod, acct)
	}
	if u := a.Units[acct.Unit]; u != nil {
		acct.Queue = u.Queue
	} else if !acct.Unit.IsZero() || a.Ours(pod) {
		var asked string
		acct.Queue, asked = a.resolveQueueLocked("", pod, pod.Namespace)
		a.setAskedLocked(acct, asked)
		acct.FollowsNS = pod.Labels[qapi.QueueLabel] == ""
	}
	a.Pods[pod.UID] = acct
	a.indexPodLocked(acct, singleton) // a singleton's unit has it as its pod's
	if acct.FollowsNS {
		a.indexNSLocked(pod.Namespace, pod.UID, acct)
	}
	if acct.Bound {
		a.holdLocked(acct)
	}
	a.trackEndLocked(pod, acct, group)
	a.trackUnlimitedLocked(pod, acct)
	return act, false
}
