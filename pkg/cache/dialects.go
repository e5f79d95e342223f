package cache

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// Gangs come in dialects: scheduler-plugins' PodGroups (read here, the
// cache's own informer, since the gangs Caldera makes for annotations are
// of that API too), and each other API through its adapter (pkg/dialect),
// which the command hands to the cache. Every adapter hands over groups as
// groupspec.Spec through the methods below (the cache is a dialect.Sink),
// so from then on gang readiness, admission, fair share, reclaim and
// placement do not know the source.
//
// All dialects name groups by namespace and name, so they share one key
// space: the PodGroup seen first holds a name, and one of another dialect
// under the same name is ignored until the first is deleted and the second
// changes (shadowedLocked). Caldera's own Queue of a name wins over a
// dialect's (Volcano's "default" queue among them): queueShadowedLocked.

// podTask names the task (role) of a gang member, by the dialect's own
// means: Volcano's task-spec annotation or label; "" for none.
func podTask(pod *v1.Pod) string { return volcano.TaskName(pod) }

// The Sink's methods: SetGroup and DeleteGroup (handlers.go), UpdateGroup
// and SetQueue (below).

// shadowedLocked reports whether s, of one dialect, names a group whose
// object is of another: the first holds the name (see above).
func shadowedLocked(logger klog.Logger, g *gangbook.Group, s *groupspec.Spec) bool {
	if g.Obj == nil || g.Obj.Source.Dialect == s.Source.Dialect {
		return false
	}
	logger.V(2).Info("Two gang APIs name one PodGroup; the one seen first is scheduled", "podGroup", g.Key.String(),
		"held", g.Obj.Source.APIVersion, "ignored", s.Source.APIVersion)
	return true
}

// An informer update may carry a different object under the same name: a pod
// or PodGroup deleted and recreated while the watch was broken reaches the
// informer's relist as one update whose UID changed (client-go delivers
// replaced objects that way). Everything the cache keeps is keyed by UID or
// follows one object's history (a member's state, a gang's backoff and
// admission), so such an update is the old object's delete followed by the
// new one's add: otherwise the old UID stays counted, as a bound member or as
// queue usage, forever.

// replaced reports whether old and obj are different objects (their UIDs
// differ). Objects without metadata are never replaced.
func replaced(old, obj any) bool {
	o, ok1 := old.(metav1.Object)
	n, ok2 := obj.(metav1.Object)
	return ok1 && ok2 && o.GetUID() != n.GetUID()
}

// UpdateGroup implements dialect.Sink: it takes an update of a group's
// object, read as a spec by its adapter: a replaced object (its uid changed) is the old one's delete
// followed by the new one's add, so that a recreated PodGroup starts fresh
// (no backoff, first attempt, last Event or admission of the old one).
func (c *Cache) UpdateGroup(logger klog.Logger, old, s *groupspec.Spec) {
	if old != nil && s != nil && old.Source.UID != s.Source.UID {
		c.DeleteGroup(logger, old)
	}
	c.SetGroup(logger, s)
}

// SetQueue implements dialect.Sink: it takes a queue added or updated, or
// deleted, Caldera's own (ApplyQueue, DeleteQueue) or a dialect's; a
// dialect's queue of the name of a Caldera Queue is ignored.
func (c *Cache) SetQueue(q *qapi.Queue, deleted bool) {
	if q == nil {
		return
	}
	c.mu.Lock()
	act, took := c.adm.SetQueueLocked(q, deleted, c.dirty, c.membersSynced.fired())
	if took && deleted {
		c.metrics.forgetQueue(q.Name)
	}
	c.mu.Unlock()
	c.activate(klog.Background(), act)
}
