package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// podAcct remembers how one unfinished pod was counted, so that its update or
// deletion subtracts exactly that.
type podAcct struct {
	unit  queue.Key
	queue string
	req   resources.List
	bound bool
	// unlimited: bound without a run-time limit, counted in the estimated
	// room (estimate.go).
	unlimited bool
	// followsNS: the queue was resolved without a unit for a pod with no
	// queue label of its own, so it is the namespace's (or the default);
	// such accounts are indexed in nsPods and move when the label does.
	followsNS bool
	// prio is the pod's priority, for the per-priority allocated amounts.
	prio int32
	// asked is the queue the pod's labels name when no Queue has that name
	// (queue is then MissingQueue), else "".
	asked string
	// slot is the account's index in unitPods[unit].
	slot int32
	// node is the node a bound pod is on (its room in feasibleState).
	node string
}

// queueUsage is one queue's allocated and inflight amounts.
type queueUsage struct {
	allocated, inflight resources.List
}

// indexPodLocked records that p is accounted to p.unit. O(1).
func (a *admissionState) indexPodLocked(p *podAcct) {
	if p.unit.IsZero() {
		return
	}
	l := a.unitPods[p.unit]
	p.slot = int32(len(l))
	a.unitPods[p.unit] = append(l, p)
}

// unindexPodLocked forgets that p is accounted to p.unit, moving the last
// account of the unit into its slot. O(1). The list of a unit that exists
// is kept even when empty, so that a pod's next event does not allocate it
// again.
func (a *admissionState) unindexPodLocked(p *podAcct) {
	l := a.unitPods[p.unit]
	if p.unit.IsZero() || int(p.slot) >= len(l) || l[p.slot] != p {
		return
	}
	last := l[len(l)-1]
	l[p.slot], last.slot = last, p.slot
	l[len(l)-1] = nil
	l = l[:len(l)-1]
	if len(l) == 0 && a.units[p.unit] == nil {
		delete(a.unitPods, p.unit)
		return
	}
	a.unitPods[p.unit] = l
}

// indexNSLocked records that pod uid's account follows namespace ns.
func (a *admissionState) indexNSLocked(ns string, uid types.UID, p *podAcct) {
	m := a.nsPods[ns]
	if m == nil {
		m = map[types.UID]*podAcct{}
		a.nsPods[ns] = m
	}
	m[uid] = p
}

// unindexNSLocked forgets that pod uid's account follows namespace ns.
func (a *admissionState) unindexNSLocked(ns string, uid types.UID) {
	m := a.nsPods[ns]
	delete(m, uid)
	if len(m) == 0 {
		delete(a.nsPods, ns)
	}
}

// moveAcctLocked moves one pod's account, with what it holds, to queue q.
// Accounts of a unit move with it (moveUnitLocked); this is for the others.
func (a *admissionState) moveAcctLocked(p *podAcct, q string) {
	if p.queue == q {
		return
	}
	if p.bound {
		if old := a.usage[p.queue]; old != nil && p.queue != "" {
			old.allocated.Sub(p.req)
		}
		if q != "" {
			a.usageLocked(q).allocated.Add(p.req)
		}
	}
	a.retagLocked(p, q)
}

// retagLocked moves one pod's accounting to queue q.
func (a *admissionState) retagLocked(p *podAcct, q string) {
	if p.bound {
		a.prioLocked(p.queue, p.prio, p.req, -1)
		a.prioLocked(q, p.prio, p.req, 1)
		a.feas.rooms.Requeue(p.node, p.queue, q, p.req)
		a.est.requeue(p, q)
		switch {
		case p.queue == "" && q != "":
			a.outside.Sub(p.req)
		case p.queue != "" && q == "":
			a.outside.Add(p.req)
		}
	}
	p.queue = q
}

// prioLocked adds (sign 1) or subtracts (-1) req at queue and priority.
func (a *admissionState) prioLocked(queue string, prio int32, req resources.List, sign int) {
	if queue == "" {
		return
	}
	m := a.byPrio[queue]
	if m == nil {
		m = map[int32]resources.List{}
		a.byPrio[queue] = m
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
func (a *admissionState) preemptibleLocked(queue string, prio int32) resources.List {
	out := resources.List{}
	for p, l := range a.byPrio[queue] {
		if p < prio {
			out.Add(l)
		}
	}
	return out
}

func (a *admissionState) usageLocked(q string) *queueUsage {
	u := a.usage[q]
	if u == nil {
		u = &queueUsage{allocated: resources.List{}, inflight: resources.List{}}
		a.usage[q] = u
		if _, ok := a.sorting[q]; !ok {
			a.sorting[q] = queueSort{}
		}
	}
	return u
}

// accountPodLocked accounts an unfinished pod for admission (finished or
// deleted pods are taken out), the accounting side of ApplyPod and
// DeletePod: what nodes hold, per queue and in all, and the singletons
// waiting for admission. pod's GroupKeyOf is gk and labelled. O(1), plus
// the units refused for a capability deficit when a bound pod leaves.
func (c *Cache) accountPodLocked(pod *v1.Pod, gk gangbook.GroupKey, labelled, deleted bool) (act map[string]*v1.Pod) {
	a := c.adm
	c.adm.trackNominationLocked(pod, deleted)
	finished := pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
	if pod.Spec.NodeName != "" || deleted || finished {
		// Bound (added to allocated below, under the same lock) or gone.
		a.extras.drop(pod.UID)
	}
	old := a.pods[pod.UID]
	if old != nil {
		act = a.unaccountLocked(pod, old)
	}
	singleton := a.singletonOfLocked(pod, labelled, old)
	if deleted || finished {
		a.learnRunLocked(pod, old, time.Now())
		a.trackEndLocked(pod, nil, nil)
		c.evictions.podLeft(pod.UID, time.Now()) // its eviction, if any, is over
		if singleton {
			if u := a.units[podUnitKey(pod)]; u != nil {
				a.dropUnitLocked(u)
			}
		}
		return act
	}
	// The pod's previous account is rewritten in place: a bind or unbind is
	// then free of allocations (no new account, key or request list).
	acct, oldReq := old, resources.List(nil)
	if acct == nil {
		acct = &podAcct{}
	} else {
		oldReq = old.req
	}
	*acct = podAcct{req: c.requests.podRequest(pod, oldReq), bound: pod.Spec.NodeName != "", prio: gangbook.PodPriority(pod), node: pod.Spec.NodeName}
	if labelled && a.ours(pod) {
		acct.unit = gangUnitKey(gk)
	} else if singleton {
		acct.unit = podUnitKey(pod)
		a.singletonUnitLocked(pod, acct)
	}
	if u := a.units[acct.unit]; u != nil {
		acct.queue = u.queue
	} else if !acct.unit.IsZero() || a.ours(pod) {
		acct.queue, acct.asked = c.adm.resolveQueueLocked("", pod, pod.Namespace)
		acct.followsNS = pod.Labels[qapi.QueueLabel] == ""
	}
	a.pods[pod.UID] = acct
	a.indexPodLocked(acct)
	if acct.followsNS {
		a.indexNSLocked(pod.Namespace, pod.UID, acct)
	}
	if acct.bound {
		c.adm.holdLocked(acct)
	}
	var group map[string]string
	if labelled {
		group = groupAnnotations(c.groups[gk])
	}
	c.notices.noteRunLimit(pod, group)
	a.trackEndLocked(pod, acct, group)
	a.trackUnlimitedLocked(pod, acct)
	return act
}

// unaccountLocked takes pod's previous account old out of every aggregate
// and index, and returns the pods to activate when it held room: freed
// room may admit the units refused for a capability deficit. O(1).
func (a *admissionState) unaccountLocked(pod *v1.Pod, old *podAcct) (act map[string]*v1.Pod) {
	if old.bound {
		a.est.unbind(old)
		a.used.Sub(old.req)
		a.feas.rooms.Bind(old.node, old.queue, old.req, -1)
		if q := a.usage[old.queue]; q != nil {
			q.allocated.Sub(old.req)
		}
		if old.queue == "" {
			a.outside.Sub(old.req)
		}
		a.prioLocked(old.queue, old.prio, old.req, -1)
		if u := a.units[old.unit]; u != nil {
			u.release(old.req)
			a.setInflightLocked(u)
		}
		a.kickLocked() // room was freed
		act = a.takeDeficitRefusedLocked()
		a.clearFreeRoomOnlyLocked()
	}
	a.unindexPodLocked(old)
	if old.followsNS {
		a.unindexNSLocked(pod.Namespace, pod.UID)
	}
	delete(a.pods, pod.UID)
	return act
}

// singletonOfLocked reports whether pod is admitted as a group of one; a
// singleton that joined a PodGroup through its label loses its unit, its
// gang being admitted instead. O(1).
func (a *admissionState) singletonOfLocked(pod *v1.Pod, labelled bool, old *podAcct) bool {
	if !labelled && a.opts.AdmitSingletons && a.ours(pod) {
		return true
	}
	// Its unit exists only while its account names it, so members already
	// accounted as such skip the lookup.
	if a.opts.AdmitSingletons && (old == nil || old.unit.Kind == queue.KindPod) {
		if u := a.units[podUnitKey(pod)]; u != nil && u.gang == nil && u.pod.UID == pod.UID {
			a.dropUnitLocked(u)
		}
	}
	return false
}

// singletonUnitLocked creates or refreshes the unit of singleton pod,
// accounted as acct: its queue, priority, request, and whether it waits for
// admission. O(1).
func (a *admissionState) singletonUnitLocked(pod *v1.Pod, acct *podAcct) {
	u := a.units[acct.unit]
	if u == nil {
		u = &unit{key: acct.unit, pod: pod, members: 1, min: 1}
		a.units[acct.unit] = u
	}
	u.pod = pod
	q, asked := a.resolveQueueLocked("", pod, pod.Namespace)
	u.asked = asked
	a.moveUnitLocked(u, q)
	u.priority, u.created = gangbook.PodPriority(pod), pod.CreationTimestamp.Time
	if !u.request.Equal(acct.req) {
		// Resized: an admitted singleton reserves what it asks now.
		u.request = acct.req
		a.setInflightLocked(u)
	}
	if acct.bound && !u.admitted {
		// Bound without us (a restart): it holds what it holds.
		u.admitted = true
		a.pending.Delete(u.key)
	}
	if !u.admitted {
		a.setPendingLocked(u)
		a.kickLocked()
	}
}

// holdLocked adds bound account acct to every aggregate: the cluster's, its
// node's, its queue's (or what is held outside the queues) and its unit's.
// O(1).
func (a *admissionState) holdLocked(acct *podAcct) {
	a.used.Add(acct.req)
	a.feas.rooms.Bind(acct.node, acct.queue, acct.req, 1)
	if acct.queue != "" {
		a.usageLocked(acct.queue).allocated.Add(acct.req)
		a.prioLocked(acct.queue, acct.prio, acct.req, 1)
	} else {
		a.outside.Add(acct.req)
	}
	if u := a.units[acct.unit]; u != nil {
		u.hold(acct.req)
		a.setInflightLocked(u)
	}
}
