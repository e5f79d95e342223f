package cache

import (
	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
)

// AdmissionOf returns the admission view of pod's unit, false when the
// cache knows no such unit (yet). O(1).
func (c *Cache) AdmissionOf(pod *v1.Pod) (admission.UnitView, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.AdmissionOfLocked(pod, c.groups)
}
