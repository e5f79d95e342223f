package cache

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/status"
)

// The metrics are process-wide and other tests of the package move them too:
// these tests use queue names of their own and compare counters by delta.

func gaugeValue(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	m := sample(t, name, labels)
	return m.GetGauge().GetValue(), m != nil
}

// sample is the first series of the metric name whose labels include
// labels, nil when there is none.
func sample(t *testing.T, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if testutil.LabelsMatch(m, labels) {
				return m
			}
		}
	}
	return nil
}

func histogramCountSum(t *testing.T, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, name, labels)
	if err != nil {
		return 0, 0 // no series yet
	}
	return vec.GetAggregatedSampleCount(), vec.GetAggregatedSampleSum()
}

func rejections(t *testing.T, reason string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(gangRejections.WithLabelValues(reason))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMetricsRegisteredOnce(t *testing.T) {
	// Several caches in one process share the vectors: registering twice
	// would panic (MustRegister), and every vector is registered.
	RegisterMetrics()
	newTestCache(t)
	newTestCache(t)
	RegisterMetrics()
	for _, m := range []metrics.Registerable{queueDeserved, queueAllocated, queueShare, podGroups, admissionWait, gangPermitWait, gangRejections} {
		if err := legacyregistry.Register(m); err == nil {
			t.Errorf("%T was not registered by RegisterMetrics", m)
		}
	}
}

func TestMetricsQueuesAndGroups(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("obs-a", weight(1)), mkQueue("obs-b", weight(3)))
	c.ApplyNode(logger, mkNode("n1", "16"))
	pg := mkPG("ns", "obs-g", 2, pgQueue("obs-a")) // created an hour before t0
	withPodGroups(c, pgfake.NewSimpleClientset(pg), nil)
	addPG(c, pg)
	pods := []*v1.Pod{memberOf("ns", "obs-m0", "obs-g"), memberOf("ns", "obs-m1", "obs-g", cpu("3"))}
	for _, p := range pods {
		podEvent(c, p)
	}
	n0, s0 := histogramCountSum(t, "caldera_admission_wait_seconds", map[string]string{"queue": "obs-a"})
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	n1, s1 := histogramCountSum(t, "caldera_admission_wait_seconds", map[string]string{"queue": "obs-a"})
	if n1-n0 != 1 || s1-s0 != 3600 {
		t.Errorf("admission wait: %d samples summing %vs added, want 1 of 3600s", n1-n0, s1-s0)
	}
	// Another pass admits nothing new and observes nothing.
	pass(c, t0.Add(time.Second))
	if n, _ := histogramCountSum(t, "caldera_admission_wait_seconds", map[string]string{"queue": "obs-a"}); n != n1 {
		t.Errorf("admission wait observed again: %d samples, want %d", n, n1)
	}

	c.mu.RLock()
	wantDeserved := float64(c.adm.Shares.Deserved("obs-a")["cpu"]) / 1000
	wantShare := c.adm.Shares.Share("obs-a")
	c.mu.RUnlock()
	if v, ok := gaugeValue(t, "caldera_queue_deserved", map[string]string{"queue": "obs-a", "resource": "cpu"}); !ok || v != wantDeserved || v == 0 {
		t.Errorf("queue_deserved{obs-a,cpu} = %v (present %v), want %v", v, ok, wantDeserved)
	}
	if v, ok := gaugeValue(t, "caldera_queue_share", map[string]string{"queue": "obs-a"}); !ok || v != wantShare {
		t.Errorf("queue_share{obs-a} = %v (present %v), want %v", v, ok, wantShare)
	}
	if _, ok := gaugeValue(t, "caldera_queue_share", map[string]string{"queue": "obs-b"}); !ok {
		t.Errorf("queue_share{obs-b} missing")
	}

	// The members bind: allocated follows at the next pass.
	for _, p := range pods {
		podEvent(c, next(p, boundTo("n1")))
	}
	pass(c, t0.Add(2*time.Second))
	if v, ok := gaugeValue(t, "caldera_queue_allocated", map[string]string{"queue": "obs-a", "resource": "cpu"}); !ok || v != 4 {
		t.Errorf("queue_allocated{obs-a,cpu} = %v (present %v), want 4 cores", v, ok)
	}
	if v, ok := gaugeValue(t, "caldera_queue_allocated", map[string]string{"queue": "obs-a", "resource": "memory"}); !ok || v != 2*(1<<30) {
		t.Errorf("queue_allocated{obs-a,memory} = %v (present %v), want 2Gi in bytes", v, ok)
	}

	// The status pass counts groups by queue and phase.
	pendingWrites(c) // the test cache has no PodGroup lister to write them
	syncStatus(c)
	if v, ok := gaugeValue(t, "caldera_podgroups", map[string]string{"queue": "obs-a", "phase": string(gang.PhaseScheduling)}); !ok || v != 1 {
		t.Errorf("podgroups{obs-a,%s} = %v (present %v), want 1", gang.PhaseScheduling, v, ok)
	}
	for _, p := range pods {
		podEvent(c, next(p, boundTo("n1"), phase(v1.PodRunning)))
	}
	pendingWrites(c) // the test cache has no PodGroup lister to write them
	syncStatus(c)
	if _, ok := gaugeValue(t, "caldera_podgroups", map[string]string{"queue": "obs-a", "phase": string(gang.PhaseScheduling)}); ok {
		t.Errorf("podgroups{obs-a,%s} still present after the gang ran", gang.PhaseScheduling)
	}
	if v, ok := gaugeValue(t, "caldera_podgroups", map[string]string{"queue": "obs-a", "phase": string(gang.PhaseRunning)}); !ok || v != 1 {
		t.Errorf("podgroups{obs-a,%s} = %v (present %v), want 1", gang.PhaseRunning, v, ok)
	}

	// A deleted queue's series go.
	c.SetQueue(mkQueue("obs-b", weight(3)), true)
	for _, name := range []string{"caldera_queue_share", "caldera_queue_deserved", "caldera_queue_allocated"} {
		if _, ok := gaugeValue(t, name, map[string]string{"queue": "obs-b"}); ok {
			t.Errorf("%s{queue=obs-b} survives the queue's deletion", name)
		}
	}
	pass(c, t0.Add(3*time.Second))
	if _, ok := gaugeValue(t, "caldera_queue_share", map[string]string{"queue": "obs-b"}); ok {
		t.Errorf("queue_share{obs-b} is back after a pass")
	}
	if _, ok := gaugeValue(t, "caldera_queue_share", map[string]string{"queue": "obs-a"}); !ok {
		t.Errorf("queue_share{obs-a} went with obs-b")
	}
}

func TestMetricsPermitWait(t *testing.T) {
	c, h, pods := gangOf(t, 3, 3)
	n0, s0 := histogramCountSum(t, "caldera_gang_permit_wait_seconds", nil)
	cycle(c, h, pods[0], "n1", t0)
	cycle(c, h, pods[1], "n1", t0.Add(time.Second))
	if n, _ := histogramCountSum(t, "caldera_gang_permit_wait_seconds", nil); n != n0 {
		t.Fatalf("permit wait observed before the gang was allowed")
	}
	if _, r := cycle(c, h, pods[2], "n1", t0.Add(5*time.Second)); !r.Allow {
		t.Fatalf("Permit(p2) = %+v, want allow", r)
	}
	n1, s1 := histogramCountSum(t, "caldera_gang_permit_wait_seconds", nil)
	if n1-n0 != 1 || s1-s0 != 5 {
		t.Errorf("permit wait: %d samples summing %vs added, want 1 of 5s", n1-n0, s1-s0)
	}
}

func TestMetricsRejections(t *testing.T) {
	t.Run("permit timeout", func(t *testing.T) {
		c, h, pods := gangOf(t, 3, 3)
		before := rejections(t, RejectPermitTimeout)
		a0, _ := cycle(c, h, pods[0], "n1", t0)
		c.Unreserve(logger, a0, t0.Add(defaultPermitTimeout), testBackoff, defaultPermitTimeout)
		if got := rejections(t, RejectPermitTimeout) - before; got != 1 {
			t.Errorf("permit_timeout rejections += %v, want 1", got)
		}
	})
	t.Run("bind failure", func(t *testing.T) {
		c, h, pods := gangOf(t, 2, 1)
		before := rejections(t, RejectBindFailure)
		a0, r := cycle(c, h, pods[0], "n1", t0)
		if !r.Allow {
			t.Fatalf("Permit = %+v, want allow", r)
		}
		// The minimum is placed: a failed binding of that member releases it.
		c.Unreserve(logger, a0, t0.Add(time.Second), testBackoff, defaultPermitTimeout)
		if got := rejections(t, RejectBindFailure) - before; got != 1 {
			t.Errorf("bind_failure rejections += %v, want 1", got)
		}
	})
	t.Run("unschedulable, once per release", func(t *testing.T) {
		c, _, pods := gangOf(t, 3, 3)
		before := rejections(t, RejectUnschedulable)
		c.Unschedulable(logger, pods[0], t0, testBackoff, "no fit")
		c.Unschedulable(logger, pods[1], t0, testBackoff, "no fit") // backing off: no release
		if got := rejections(t, RejectUnschedulable) - before; got != 1 {
			t.Errorf("unschedulable rejections += %v, want 1", got)
		}
	})
	t.Run("podgroup deleted", func(t *testing.T) {
		c, h, pods := gangOf(t, 3, 3)
		before := rejections(t, RejectPodGroupDeleted)
		cycle(c, h, pods[0], "n1", t0)
		delPG(c, mkPG("ns", "g", 3))
		if got := rejections(t, RejectPodGroupDeleted) - before; got != 1 {
			t.Errorf("podgroup_deleted rejections += %v, want 1", got)
		}
	})
}

// dumpOf decodes Dump's JSON generically, as jq would read it.
func dumpOf(t *testing.T, c *Cache) map[string]any {
	t.Helper()
	data, err := c.Dump()
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("dump is not JSON: %v\n%s", err, data)
	}
	return out
}

func TestDump(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("dq", weight(2)))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "dg", 2, pgQueue("dq")))
	pods := []*v1.Pod{memberOf("ns", "d0", "dg"), memberOf("ns", "d1", "dg", cpu("2"))}
	for _, p := range pods {
		podEvent(c, p)
	}
	pass(c, t0)
	c.PreFilter(pods[0], t0)
	podEvent(c, next(pods[0], boundTo("n1")))

	d := dumpOf(t, c)
	cluster := d["cluster"].(map[string]any)
	if cluster["nodes"] != 1.0 || cluster["allocatable"].(map[string]any)["cpu"] != 16000.0 {
		t.Errorf("cluster = %v, want 1 node of 16000m cpu", cluster)
	}
	queues := d["queues"].([]any)
	if len(queues) != 1 {
		t.Fatalf("queues = %v, want dq", queues)
	}
	q := queues[0].(map[string]any)
	for _, f := range []string{"name", "weight", "state", "deserved", "allocated", "inflight", "share", "pending"} {
		if _, ok := q[f]; !ok {
			t.Errorf("queue lacks %q: %v", f, q)
		}
	}
	if q["name"] != "dq" || q["weight"] != 2.0 || q["allocated"].(map[string]any)["cpu"] != 1000.0 || q["inflight"].(map[string]any)["cpu"] != 2000.0 {
		t.Errorf("queue = %v, want dq of weight 2 with 1000m allocated and 2000m inflight", q)
	}
	groups := d["groups"].([]any)
	if len(groups) != 1 {
		t.Fatalf("groups = %v, want ns/dg", groups)
	}
	g := groups[0].(map[string]any)
	if g["key"] != "ns/dg" || g["queue"] != "dq" || g["phase"] != string(gang.PhasePending) || g["admitted"] != true ||
		g["minMember"] != 2.0 || g["firstAttempt"] == nil || g["minRequest"].(map[string]any)["cpu"] != 3000.0 {
		t.Errorf("group = %v", g)
	}
	if counts := g["counts"].(map[string]any); counts["members"] != 2.0 || counts["bound"] != 1.0 {
		t.Errorf("group counts = %v, want 2 members, 1 bound", counts)
	}

	// The backoff shows after a release.
	c.Unschedulable(logger, pods[1], t0, testBackoff, "no fit")
	g = dumpOf(t, c)["groups"].([]any)[0].(map[string]any)
	if g["backoffUntil"] == nil || !strings.Contains(g["unschedulable"].(string), "no fit") {
		t.Errorf("group after a release = %v, want backoffUntil and the reason", g)
	}
}

// The dump lists each queue's pending units in the order the next pass
// examines them: priority, then creation time.
func TestDumpQueueOrder(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("oq", capability("3")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	podEvent(c, single("ns", "running", inQueue("oq"), boundTo("n1"), cpu("2")))
	for _, p := range []*v1.Pod{
		single("ns", "late", inQueue("oq"), cpu("2"), createdAt(t0)),
		single("ns", "early", inQueue("oq"), cpu("2"), createdAt(t0.Add(-time.Hour))),
		single("ns", "urgent", inQueue("oq"), cpu("2"), priority(10), createdAt(t0.Add(time.Hour))),
	} {
		podEvent(c, p)
	}
	pass(c, t0.Add(2*time.Hour))
	q := dumpOf(t, c)["queues"].([]any)[0].(map[string]any)
	var order []string
	for _, k := range q["order"].([]any) {
		order = append(order, k.(string))
	}
	if want := []string{"pod:ns/urgent", "pod:ns/early", "pod:ns/late"}; !slices.Equal(order, want) {
		t.Errorf("queue order %v, want %v", order, want)
	}
}

func TestDumpWithoutAdmission(t *testing.T) {
	c, _, _ := gangOf(t, 2, 2)
	d := dumpOf(t, c)
	if qs := d["queues"].([]any); len(qs) != 0 {
		t.Errorf("queues = %v, want none", qs)
	}
	g := d["groups"].([]any)[0].(map[string]any)
	if g["key"] != "ns/g" || g["admitted"] != true || g["queue"] != nil {
		t.Errorf("group = %v", g)
	}
}

func TestDumpToFile(t *testing.T) {
	c, _, _ := gangOf(t, 2, 2)
	dir := t.TempDir()
	t.Setenv(DumpDirEnv, dir)
	path, err := c.DumpToFile("")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "caldera-cache-") || !strings.HasSuffix(path, ".json") {
		t.Errorf("dump file %s, want caldera-cache-*.json in %s", path, dir)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Errorf("dump file is not JSON: %s", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dump dir holds %d entries, want the dump alone", len(entries))
	}
}

// meLock is a leader-election lock of identity "me" whose writes succeed:
// the test plays the elector by calling Update.
type meLock struct{ resourcelock.Interface }

func (meLock) Identity() string                                                { return "me" }
func (meLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return nil }

// Only the replica that schedules exports the queue gauges: a standby runs
// admission passes too, and a sum over replicas would count each queue
// twice. A leader that loses the Lease drops its series at its next pass.
func TestQueueGaugesFollowLeadership(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("lead-a"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	podEvent(c, single("ns", "lead-p", inQueue("lead-a"), boundTo("n1"), cpu("1")))
	lead := status.NewLeadership()
	lock := meLock{}
	le := &leaderelection.LeaderElectionConfig{Lock: lock, RenewDeadline: time.Hour}
	lead.Follow(le)
	c.lead = lead
	share := map[string]string{"queue": "lead-a"}

	pass(c, t0) // a standby: nothing written to the Lease by this replica
	if v, ok := gaugeValue(t, "caldera_queue_share", share); ok {
		t.Errorf("a standby exports queue_share{lead-a} = %v", v)
	}
	if err := le.Lock.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	pass(c, t0.Add(time.Second))
	if _, ok := gaugeValue(t, "caldera_queue_share", share); !ok {
		t.Error("the leader does not export queue_share{lead-a}")
	}
	if v, ok := gaugeValue(t, "caldera_queue_allocated", map[string]string{"queue": "lead-a", "resource": "cpu"}); !ok || v != 1 {
		t.Errorf("the leader exports queue_allocated{lead-a,cpu} = %v (present %v), want 1", v, ok)
	}
	// Another replica took the Lease.
	if err := le.Lock.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "other"}); err != nil {
		t.Fatal(err)
	}
	pass(c, t0.Add(2*time.Second))
	for _, name := range []string{"caldera_queue_share", "caldera_queue_deserved", "caldera_queue_allocated"} {
		if v, ok := gaugeValue(t, name, map[string]string{"queue": "lead-a"}); ok {
			t.Errorf("a replica that lost the Lease still exports %s{lead-a} = %v", name, v)
		}
	}
}

// A failed PodGroup status write counts in caldera_status_write_errors_total,
// whose series exist at zero from registration on (an alert on increase()
// sees the first failure).
func TestStatusWriteErrorsCounted(t *testing.T) {
	RegisterMetrics()
	status.RegisterMetrics()
	before, ok := counterValue(t, "caldera_status_write_errors_total", map[string]string{"object": status.WritePodGroupStatus})
	if !ok {
		t.Fatal("caldera_status_write_errors_total{object=podgroup_status} is not exported before any failure")
	}
	for _, o := range []string{status.WritePodGroupAnnotation, status.WriteQueueStatus} {
		if _, ok := counterValue(t, "caldera_status_write_errors_total", map[string]string{"object": o}); !ok {
			t.Errorf("caldera_status_write_errors_total{object=%s} is not exported before any failure", o)
		}
	}
	if _, ok := counterValue(t, "caldera_gang_rejections_total", map[string]string{"reason": RejectPodGroupDeleted}); !ok {
		t.Error("caldera_gang_rejections_total{reason=podgroup_deleted} is not exported at zero")
	}

	c, h, pods := gangOf(t, 2, 2)
	client := pgfake.NewSimpleClientset(mkPG("ns", "g", 2))
	client.PrependReactor("update", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	withPodGroups(c, client, nil)
	for _, p := range pods {
		update(c, p, next(p, boundTo("n1"), phase(v1.PodRunning)))
	}
	h.recorded()
	syncStatus(c)
	if after, _ := counterValue(t, "caldera_status_write_errors_total", map[string]string{"object": status.WritePodGroupStatus}); after != before+1 {
		t.Errorf("status write errors went from %v to %v, want one more", before, after)
	}
}

func counterValue(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	m := sample(t, name, labels)
	return m.GetCounter().GetValue(), m != nil
}
