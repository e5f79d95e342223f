package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// SetQueue implements dialect.Sink: it takes a queue added or updated, or
// deleted, Caldera's own (ApplyQueue, DeleteQueue) or a dialect's; a
// dialect's queue of the name of a Caldera Queue is ignored.
func (c *Cache) SetQueue(q *qapi.Queue, deleted bool) {
	if q == nil {
		return
	}
	c.mu.Lock()
	act, took := c.adm.setQueueLocked(q, deleted, c.dirty, c.membersSynced.fired())
	if took && deleted {
		c.metrics.forgetQueue(q.Name)
	}
	c.mu.Unlock()
	c.activate(klog.Background(), act)
}

// setQueueLocked is SetQueue on the admission side: it records q (deleted,
// or not), rebuilds the queue tree, and returns the pods to activate when
// q stopped holding placement (noteHoldLocked); took is false when q was
// ignored, shadowed by a Caldera Queue of its name. dirty and synced are
// as syncGangUnitLocked takes them.
func (a *admissionState) setQueueLocked(q *qapi.Queue, deleted bool, dirty map[gangbook.GroupKey]struct{}, synced bool) (act map[string]*v1.Pod, took bool) {
	if queueShadowedLocked(a.queues[q.Name], q) {
		return nil, false
	}
	if deleted {
		act = a.noteHoldLocked(q.Name, nil)
	} else {
		act = a.noteHoldLocked(q.Name, q)
	}
	_, existed := a.queues[q.Name]
	if deleted {
		delete(a.queues, q.Name)
		a.est.learned().Forget(q.Name)
	} else {
		a.queues[q.Name] = q
	}
	specs := make([]queue.Spec, 0, len(a.queues))
	for _, q := range a.queues {
		specs = append(specs, convert.QueueSpec(q))
	}
	a.tree = queue.BuildTree(specs)
	for name := range a.queues {
		s := a.sorting[name]
		s.priority = a.queues[name].Spec.Priority
		a.sorting[name] = s
	}
	a.kickLocked()
	if existed == deleted {
		// A name came or went (not a status write): what asked for it, or
		// was charged to it, moves, once the tree knows the name.
		a.refoldLocked(q.Name, dirty, synced)
	}
	return act, true
}

// namespaceQueueLocked records that namespace ns names queue q by its
// label ("" for none, or deleted: ApplyNamespace, DeleteNamespace) and
// moves what follows the label: the namespace's units, and the accounts
// without one. dirty and synced are as syncGangUnitLocked takes them.
// O(units + the namespace's accounts) when the label changed, which is
// rare; O(1) otherwise.
func (a *admissionState) namespaceQueueLocked(ns, q string, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	if a.nsQueue[ns] == q {
		return
	}
	if q == "" {
		delete(a.nsQueue, ns)
	} else {
		a.nsQueue[ns] = q
	}
	// Rare: re-resolve the namespace's units, and the accounts without one
	// (their pods have no queue label, or they would not follow it).
	nsQ, nsAsked := a.resolveQueueLocked("", nil, ns)
	for _, p := range a.nsPods[ns] {
		if !p.unit.IsZero() && a.units[p.unit] != nil {
			continue // created since: the unit decides, and moves it below
		}
		a.moveAcctLocked(p, nsQ)
		p.asked = nsAsked
	}
	for _, u := range a.units {
		switch {
		case u.gang != nil && u.gang.Key.Namespace == ns:
			a.syncGangUnitLocked(u.gang, dirty, synced)
		case u.pod != nil && u.pod.Namespace == ns:
			q, asked := a.resolveQueueLocked("", u.pod, ns)
			u.asked = asked
			a.moveUnitLocked(u, q)
			if !u.admitted {
				a.setPendingLocked(u)
			}
		}
	}
	a.kickLocked()
}
