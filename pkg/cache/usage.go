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
	var group map[string]string
	if labelled {
		group = admission.GroupAnnotations(c.groups[gk])
	}
	now := time.Now()
	act, left := c.adm.AccountPodLocked(pod, gk, labelled, deleted, group, c.requests.PodRequest, now)
	if left {
		c.evictions.PodLeft(pod.UID, now) // its eviction, if any, is over
	} else {
		c.notices.noteRunLimit(pod, group)
	}
	return act
}
