package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
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
	a := c.adm
	if queueShadowedLocked(a.queues[q.Name], q) {
		c.mu.Unlock()
		return
	}
	var act map[string]*v1.Pod
	if deleted {
		act = c.adm.noteHoldLocked(q.Name, nil)
	} else {
		act = c.adm.noteHoldLocked(q.Name, q)
	}
	defer c.activate(klog.Background(), act)
	defer c.mu.Unlock()
	_, existed := a.queues[q.Name]
	if deleted {
		delete(a.queues, q.Name)
		c.metrics.forgetQueue(q.Name)
		a.est.learned().Forget(q.Name)
	} else {
		a.queues[q.Name] = q
	}
	if existed == deleted {
		// A name came or went (not a status write): what asked for it, or
		// was charged to it, moves.
		defer a.refoldLocked(q.Name, c.dirty, c.membersSynced.fired())
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
}

// namespaceQueueLocked records that namespace ns names queue q by its
// label ("" for none, or deleted: ApplyNamespace, DeleteNamespace) and
// moves what follows the label: the namespace's units, and the accounts
// without one. dirty and synced are as syncGangUnitLocked takes them.
// O(units + the namespace's accounts) when the label changed, which is
// rare; O(1) otherwise.
func (a *admissionState) namespaceQueueLocked(ns, q string, dirty map[GroupKey]struct{}, synced bool) {
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
		case u.gang != nil && u.gang.key.Namespace == ns:
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
