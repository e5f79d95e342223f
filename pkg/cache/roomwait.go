package cache

import (
	v1 "k8s.io/api/core/v1"
)

// MayEnqueue answers CalderaEnqueue's PreEnqueue: whether pod may enter the
// scheduling queue, else why not. It may when its unit is admitted
// (Admitted) or refused for capacity: then a scheduling cycle marks it
// Unschedulable (PreFilterAwaitingRoom), which autoscalers act on.
func (c *Cache) MayEnqueue(pod *v1.Pod) (bool, string) {
	c.markQueueSeen()
	c.mu.RLock()
	defer c.mu.RUnlock()
	ok, msg, u := c.adm.AdmittedLocked(pod, c.groups)
	if ok || (u != nil && !u.Admitted && u.WaitsForRoom()) {
		return true, ""
	}
	return false, msg
}
