package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// accountPodLocked accounts an unfinished pod for admission (finished or
// deleted pods are taken out), the accounting side of ApplyPod and
// DeletePod (admission.State.AccountPodLocked), and tells the cache's own
// books: the pod's eviction is over when it leaves, and a run-time limit
// of a live pod is noted. pod's GroupKeyOf is gk and labelled.
func (c *Cache) accountPodLocked(pod *v1.Pod, gk gangbook.GroupKey, labelled, deleted bool) (act map[string]*v1.Pod) {
	// Only a departure reads the time (its run time is learned, its
	// eviction ends), and only a pod that stays reads its group's
	// annotations (its run-time limit): a restart's 150,000 bound pods
	// need neither the clock nor the second.
	departs := deleted || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
	var group map[string]string
	var now time.Time
	if departs {
		now = time.Now()
	} else if labelled {
		group = admission.GroupAnnotations(c.groups[gk])
	}
	act, left := c.adm.AccountPodLocked(pod, gk, labelled, deleted, group, c.requests.PodRequest, now)
	if left {
		c.evictions.PodLeft(pod.UID, now) // its eviction, if any, is over
	} else {
		c.notices.noteRunLimit(pod, group)
	}
	return act
}
