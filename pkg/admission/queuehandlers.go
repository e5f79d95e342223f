package admission

import (
	v1 "k8s.io/api/core/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// SetQueueLocked is SetQueue on the admission side: it records q (deleted,
// or not), rebuilds the queue tree, and returns the pods to activate when
// q stopped holding placement (noteHoldLocked); took is false when q was
// ignored, shadowed by a Caldera Queue of its name. dirty and synced are
// as SyncGangUnitLocked takes them.
func (a *State) SetQueueLocked(q *qapi.Queue, deleted bool, dirty map[gangbook.GroupKey]struct{}, synced bool) (act map[string]*v1.Pod, took bool) {
	if queueShadowedLocked(a.Queues[q.Name], q) {
		return nil, false
	}
	if deleted {
		act = a.noteHoldLocked(q.Name, nil)
	} else {
		act = a.noteHoldLocked(q.Name, q)
	}
	_, existed := a.Queues[q.Name]
	if deleted {
		delete(a.Queues, q.Name)
		a.Est.Learned().Forget(q.Name)
	} else {
		a.Queues[q.Name] = q
	}
	specs := make([]queue.Spec, 0, len(a.Queues))
	for _, q := range a.Queues {
		specs = append(specs, convert.QueueSpec(q))
	}
	a.Tree = queue.BuildTree(specs)
	for name := range a.Queues {
		s := a.Sorting[name]
		s.Priority = a.Queues[name].Spec.Priority
		a.Sorting[name] = s
	}
	a.KickLocked()
	if existed == deleted {
		// A name came or went (not a status write): what asked for it, or
		// was charged to it, moves, once the tree knows the name.
		a.refoldLocked(q.Name, dirty, synced)
	}
	return act, true
}

// NamespaceQueueLocked records that namespace ns names queue q by its
// label ("" for none, or deleted: ApplyNamespace, DeleteNamespace) and
// moves what follows the label: the namespace's units, and the accounts
// without one. dirty and synced are as SyncGangUnitLocked takes them.
// O(units + the namespace's accounts) when the label changed, which is
// rare; O(1) otherwise.
func (a *State) NamespaceQueueLocked(ns, q string, dirty map[gangbook.GroupKey]struct{}, synced bool) {
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
		if !p.Unit.IsZero() && a.Units[p.Unit] != nil {
			continue // created since: the unit decides, and moves it below
		}
		a.moveAcctLocked(p, nsQ)
		a.setAskedLocked(p, nsAsked)
	}
	for _, u := range a.Units {
		switch {
		case u.Gang != nil && u.Gang.Key.Namespace == ns:
			a.SyncGangUnitLocked(u.Gang, dirty, synced)
		case u.Pod != nil && u.Pod.Namespace == ns:
			q, asked := a.resolveQueueLocked("", u.Pod, ns)
			u.Asked = asked
			a.moveUnitLocked(u, q)
			if !u.Admitted {
				a.setPendingLocked(u)
			}
		}
	}
	a.KickLocked()
}

// queueShadowedLocked reports whether q, a dialect's queue, names a
// Caldera Queue the cache holds: Caldera's is the queue. Caldera's own
// Queues come from a typed informer, without an apiVersion.
func queueShadowedLocked(held, q *qapi.Queue) bool {
	return held != nil && foreignQueue(q) && !foreignQueue(held)
}

// foreignQueue reports whether q was read from a dialect's queue API.
func foreignQueue(q *qapi.Queue) bool {
	return q.APIVersion != "" && q.APIVersion != qapi.SchemeGroupVersion.String()
}
