package cache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/groupspec"
)

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
