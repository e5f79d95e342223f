package status

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Objects of caldera_status_write_errors_total.
const (
	WritePodGroupStatus     = "podgroup_status"
	WritePodGroupAnnotation = "podgroup_annotation"
	WriteQueueStatus        = "queue_status"
	WritePodNomination      = "pod_nomination"
	WritePodCondition       = "pod_condition"
	// WriteCreatePodGroup: creating the PodGroup of a gang asked for by
	// annotation.
	WriteCreatePodGroup = "podgroup_create"
	// WriteProtectPod: annotating a running gang's member against
	// autoscalers' scale-down.
	WriteProtectPod = "pod_protect"
)

var (
	writeErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "caldera",
		Name:           "status_write_errors_total",
		Help:           "Number of failed writes of PodGroup status, PodGroup admission annotations, Queue status, stale pod nominations, pod conditions, created PodGroups and gang members' scale-down protection, by object.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"object"})

	overrunEvictions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "caldera",
		Name:           "overrun_evictions_total",
		Help:           "Pods evicted for running past the run-time limit they declared by annotation into a reservation whose start has come, by the pod's queue.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue"})

	registerOnce sync.Once
)

// RegisterMetrics registers the writer's metrics in legacyregistry, which
// kube-scheduler serves on its /metrics; calls after the first do nothing.
// Every series exists from the start, at zero: an alert on increase() or
// rate() then sees the first failure, which it would miss on a series that
// appears with it.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(writeErrors, overrunEvictions)
		for _, o := range []string{WritePodGroupStatus, WritePodGroupAnnotation, WriteQueueStatus, WritePodNomination, WritePodCondition, WriteCreatePodGroup, WriteProtectPod} {
			writeErrors.WithLabelValues(o)
		}
	})
}
