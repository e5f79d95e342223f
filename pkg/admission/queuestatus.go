package admission

import (
	v1 "k8s.io/api/core/v1"
)

// NominationStale is nominations.Stale: pod is the one nominated, and its
// unit is not admitted. The caller holds the cache's lock.
func (a *State) NominationStale(pod *v1.Pod) bool {
	if a.nominated[pod.UID] == pod {
		if acct := a.Pods[pod.UID]; acct != nil {
			u := a.Units[acct.Unit]
			return u != nil && !u.Admitted
		}
	}
	return false
}
