package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// ReleaseSingleton returns an admitted pod outside any gang to its queue's
// pending units when no plan frees the room it was admitted on: it was
// admitted over capability, or on room only evictions free (onPlan). Like a
// released gang, it must not keep room its queue does not have, and
// admission counts only free room for it for a while. A pod admitted on
// free room that failed to fit is not released here: its failure may be
// passing (say, room nominated to others) and the scheduler retries it; the
// next admission pass releases it if no node's free room takes it
// (ReleaseUnplaceableLocked). It reports whether it released the pod.
// O(log pending).
func (c *Cache) ReleaseSingleton(pod *v1.Pod, at time.Time) bool {
	if _, member := gangbook.GroupKeyOf(pod); member {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adm.ReleaseSingletonLocked(pod, at)
}
