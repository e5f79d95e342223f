package cache

// The scheduler's pod informer as two separate handlers, the member side and
// the accounting side, each taking the lock: ApplyPod and DeletePod run both
// halves under one lock, and these let tests deliver them apart (one
// informer lagging the other, a relabel seen by one side first) or one
// side alone.

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// onUnfinishedPod takes an add or update from the scheduler's pod informer.
func (c *Cache) onUnfinishedPod(logger klog.Logger, obj any) {
	pod := asPod(obj)
	if pod == nil {
		return
	}
	key, labelled := gangbook.GroupKeyOf(pod)
	c.mu.Lock()
	act := c.unfinishedPodLocked(pod, key, labelled)
	c.mu.Unlock()
	c.activate(logger, act)
}

// onUnfinishedPodUpdate takes an update from the scheduler's pod informer.
func (c *Cache) onUnfinishedPodUpdate(logger klog.Logger, old, obj any) {
	if replaced(old, obj) {
		c.onUnfinishedPodDelete(logger, old)
	}
	c.onUnfinishedPod(logger, obj)
}

// onAnyPodUpdate takes an update for admission's accounting of every pod.
func (c *Cache) onAnyPodUpdate(old, obj any) {
	if replaced(old, obj) {
		c.onAnyPod(old, true)
	}
	c.onAnyPod(obj, false)
}

// onAnyPod accounts every unfinished pod from the scheduler's pod informer
// (finished pods arrive as deletes): what nodes hold, per queue and in all,
// and the singletons waiting for admission. O(1) per event, plus the units
// refused for a capability deficit when a bound pod leaves.
func (c *Cache) onAnyPod(obj any, deleted bool) {
	c.activate(klog.Background(), c.accountPod(obj, deleted))
}

// accountPod is onAnyPod's accounting; it returns the pods to activate.
func (c *Cache) accountPod(obj any, deleted bool) (act map[string]*v1.Pod) {
	pod := asPod(obj)
	if pod == nil {
		return nil
	}
	gk, labelled := gangbook.GroupKeyOf(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accountPodLocked(pod, gk, labelled, deleted)
}

// onUnfinishedPodDelete is unfinishedPodDeleteLocked under the lock.
func (c *Cache) onUnfinishedPodDelete(logger klog.Logger, obj any) {
	pod := asPod(obj)
	if pod == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unfinishedPodDeleteLocked(pod)
}
