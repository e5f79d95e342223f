package cache

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Caldera's metrics live in legacyregistry, which kube-scheduler serves on
// its /metrics. They are process-wide: every Cache of the process (a test may
// build several) updates the same vectors, and registration happens once.
// Gauges are refreshed by the periodic passes (admission, status); counters
// and histograms are updated at the decision points. See docs/metrics.md.
const metricsNamespace = "caldera"

// Rejection reasons of caldera_gang_rejections_total.
const (
	RejectUnschedulable   = "unschedulable"
	RejectPermitTimeout   = "permit_timeout"
	RejectPermitRejected  = "permit_rejected"
	RejectBindFailure     = "bind_failure"
	RejectTooLarge        = "too_large"
	RejectPodGroupDeleted = "podgroup_deleted"
)

var (
	queueDeserved = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "queue_deserved",
		Help:           "Deserved share of a queue from the last admission pass, per resource (cpu in cores, other resources in base units).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue", "resource"})
	queueAllocated = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "queue_allocated",
		Help:           "What bound, unfinished pods of a queue and its descendants request, per resource (cpu in cores, other resources in base units).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue", "resource"})
	queueShare = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "queue_share",
		Help:           "Share of a queue (allocated over deserved, the largest over resources) from the last admission pass.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue"})
	podGroups = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Name:           "podgroups",
		Help:           "Number of PodGroups per queue and phase, from the last status pass.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue", "phase"})
	admissionWait = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Name:           "admission_wait_seconds",
		Help:           "Time from a group's first becoming pending (its creation) to its first admission by its queue.",
		Buckets:        metrics.ExponentialBuckets(0.01, 2, 20),
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue"})
	gangPermitWait = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Name:           "gang_permit_wait_seconds",
		Help:           "Time from a gang's first member waiting in Permit to the gang being allowed.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 20),
		StabilityLevel: metrics.ALPHA,
	})
	gangRejections = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Name:           "gang_rejections_total",
		Help:           "Number of times a gang was released or had its waiting members rejected, by reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	registerOnce sync.Once
)

// RegisterMetrics registers Caldera's metrics in legacyregistry; calls after
// the first do nothing. Every Cache calls it.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(queueDeserved, queueAllocated, queueShare, podGroups,
			admissionWait, gangPermitWait, gangRejections)
		// Every counter series exists from the start, at zero: an alert on
		// increase() or rate() then sees the first failure, which it would
		// miss on a series that appears with it.
		for _, r := range []string{RejectUnschedulable, RejectPermitTimeout, RejectPermitRejected, RejectBindFailure, RejectTooLarge, RejectPodGroupDeleted} {
			gangRejections.WithLabelValues(r)
		}
	})
}

// metricsState remembers which label series this cache published, so that
// series of deleted queues (or vanished phases and resources) are removed.
type metricsState struct {
	mu sync.Mutex
	// queueRes holds the (queue, resource) pairs of queue_deserved and
	// queue_allocated; shares the queues of queue_share.
	queueRes map[[2]string]struct{}
	shares   map[string]struct{}
	// groups holds the (queue, phase) pairs of podgroups.
	groups map[[2]string]struct{}
}

// metricValue converts a flattened amount to the unit it is exported in:
// cpu in cores, everything else in its base unit.
func metricValue(name string, v int64) float64 {
	if name == resources.CPU {
		return float64(v) / 1000
	}
	return float64(v)
}

// recordQueues refreshes the queue gauges from a, the admission side;
// lead is the replica's leadership (nil: always leading). The admission
// pass calls it with the cache's lock held. O(queues × resources) per
// pass.
//
// Only the replica that schedules exports the queue and PodGroup gauges: a
// standby runs admission passes too (its cache follows the same objects),
// and a dashboard summing over replicas would count every queue twice. A
// standby, or a leader that lost the Lease, drops its series at its next
// pass.
func (m *metricsState) recordQueues(a *admission.State, lead *status.Leadership) {
	if !a.On() {
		return
	}
	if lead != nil {
		if _, leading := lead.Leading(time.Now()); !leading {
			m.dropLeader()
			return
		}
	}
	figs := a.QueueFiguresLocked()
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[[2]string]struct{}, len(m.queueRes))
	shares := make(map[string]struct{}, len(figs))
	for name, f := range figs {
		// Report every resource either list names, so that a queue's two
		// gauges can be compared series by series.
		for r := range f.Deserved {
			seen[[2]string{name, r}] = struct{}{}
		}
		for r := range f.Allocated {
			seen[[2]string{name, r}] = struct{}{}
		}
		queueShare.WithLabelValues(name).Set(f.Share)
		shares[name] = struct{}{}
	}
	for k := range seen {
		name, r := k[0], k[1]
		queueDeserved.WithLabelValues(name, r).Set(metricValue(r, figs[name].Deserved[r]))
		queueAllocated.WithLabelValues(name, r).Set(metricValue(r, figs[name].Allocated[r]))
	}
	for k := range m.queueRes {
		if _, ok := seen[k]; !ok {
			queueDeserved.DeleteLabelValues(k[0], k[1])
			queueAllocated.DeleteLabelValues(k[0], k[1])
		}
	}
	for q := range m.shares {
		if _, ok := shares[q]; !ok {
			queueShare.DeleteLabelValues(q)
		}
	}
	m.queueRes, m.shares = seen, shares
}

// dropLeader removes every queue and PodGroup series this cache
// published.
func (m *metricsState) dropLeader() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.queueRes {
		queueDeserved.DeleteLabelValues(k[0], k[1])
		queueAllocated.DeleteLabelValues(k[0], k[1])
	}
	for q := range m.shares {
		queueShare.DeleteLabelValues(q)
	}
	for k := range m.groups {
		podGroups.DeleteLabelValues(k[0], k[1])
	}
	m.queueRes, m.shares, m.groups = nil, nil, nil
}

// forgetQueue removes a deleted queue's series at once, without waiting
// for the next pass. Callers hold the cache's lock.
func (m *metricsState) forgetQueue(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.queueRes {
		if k[0] == name {
			queueDeserved.DeleteLabelValues(k[0], k[1])
			queueAllocated.DeleteLabelValues(k[0], k[1])
			delete(m.queueRes, k)
		}
	}
	if _, ok := m.shares[name]; ok {
		queueShare.DeleteLabelValues(name)
		delete(m.shares, name)
	}
	for k := range m.groups {
		if k[0] == name {
			podGroups.DeleteLabelValues(k[0], k[1])
			delete(m.groups, k)
		}
	}
}

// RecordGroupMetrics implements status.Source: it refreshes
// caldera_podgroups; the status pass calls it. O(groups) per pass under
// the read lock, allocating only per (queue, phase).
func (c *Cache) RecordGroupMetrics() {
	counts := map[[2]string]int{}
	c.mu.RLock()
	if c.adm.On() {
		// Every group with a PodGroup has a unit that knows its queue.
		for _, u := range c.adm.Units {
			if g := u.Gang; g != nil && g.Obj != nil {
				counts[[2]string{u.Queue, string(gang.PhaseOf(g.Spec, g.Counts))}]++
			}
		}
	} else {
		for _, g := range c.groups {
			if g.Obj != nil {
				counts[[2]string{"", string(gang.PhaseOf(g.Spec, g.Counts))}]++
			}
		}
	}
	c.mu.RUnlock()
	m := &c.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, n := range counts {
		podGroups.WithLabelValues(k[0], k[1]).Set(float64(n))
	}
	for k := range m.groups {
		if _, ok := counts[k]; !ok {
			podGroups.DeleteLabelValues(k[0], k[1])
		}
	}
	seen := make(map[[2]string]struct{}, len(counts))
	for k := range counts {
		seen[k] = struct{}{}
	}
	m.groups = seen
}

// observeAdmissionWait records how long a unit of queue waited for its
// first admission: admission's observeWait.
func observeAdmissionWait(queue string, wait time.Duration) {
	admissionWait.WithLabelValues(queue).Observe(wait.Seconds())
}

// observePermitWait records how long a gang waited in Permit.
func observePermitWait(d time.Duration) {
	if d < 0 {
		d = 0
	}
	gangPermitWait.Observe(d.Seconds())
}

// countRejection counts one gang release or rejection.
func countRejection(reason string) {
	gangRejections.WithLabelValues(reason).Inc()
}
