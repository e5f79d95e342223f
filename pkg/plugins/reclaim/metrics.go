package reclaim

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The counters live in legacyregistry, which kube-scheduler serves on its
// /metrics, next to the cache's caldera_* metrics (docs/metrics.md).
var (
	evictions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "caldera",
		Name:           "reclaim_evictions_total",
		Help:           "Pods evicted by CalderaReclaim, by action (reclaim or preempt) and the victim's queue.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"action", "queue"})
	attempts = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "caldera",
		Name:           "reclaim_attempts_total",
		Help:           "CalderaReclaim PostFilter runs, by result: reclaim or preempt (evictions started), none (no plan), filtered (the plan failed the scheduler's filters).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(evictions, attempts)
	})
}
