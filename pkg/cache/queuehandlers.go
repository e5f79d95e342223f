package cache

import (
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

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
