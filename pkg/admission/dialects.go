package admission

import (
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// queueShadowedLocked reports whether q, a dialect's queue, names a
// Caldera Queue the cache holds: Caldera's is the queue. Caldera's own
// Queues come from a typed informer, without an apiVersion.
func queueShadowedLocked(held, q *qapi.Queue) bool {
	return held != nil && foreignQueue(q) && !foreignQueue(held)
}

// foreignQueue reports whether q was read from a dialect's queue API.
func foreignQueue(q *qapi.Queue) bool {
	return q.APIVersion != "" && q.APIVersion != qapi.SchemeGroupVersion.String()
}
