// Package observability_test runs Caldera's metrics and cache dump end to end
// with the shipped configuration: a real kube-apiserver on an embedded etcd,
// the CRDs from manifests/crds, and the real scheduler, whose /metrics serves
// legacyregistry and whose cache answers SIGUSR1 with a JSON dump.
package observability_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	v1 "k8s.io/api/core/v1"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/testutil"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 30 * time.Second

// series is one sample's name and labels, rendered for messages.
func series(name string, m *dto.Metric) string {
	var labels []string
	for _, l := range m.GetLabel() {
		labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

// scrape reads the scheduler's /metrics.
func scrape(t *testing.T, s *harness.Scheduler) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := s.Get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	families, err := testutil.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// has reports whether family name has a sample with at least labels.
func has(families map[string]*dto.MetricFamily, name string, labels map[string]string) bool {
	f := families[name]
	if f == nil {
		return false
	}
	for _, m := range f.GetMetric() {
		if testutil.LabelsMatch(m, labels) {
			return true
		}
	}
	return false
}

func TestObservability(t *testing.T) {
	env := harness.Start(t)
	dumpDir := t.TempDir()
	t.Setenv("CALDERA_DUMP_DIR", dumpDir)

	ns := env.Namespace(t)
	env.AddNodes(t, 2, "4", "8Gi")
	s := env.StartScheduler(t)

	// A gang that fits binds; a gang whose third member fits no node is
	// released. Its members want the same host port, one per node: admission
	// checks resources and node selection only, so it admits the gang, and
	// the scheduler's NodePorts filter refuses the third member.
	env.CreatePodGroup(t, harness.PodGroup(ns, "fits", 3))
	for i := range 3 {
		env.CreatePod(t, harness.Pod(ns, fmt.Sprint("fits-", i)).CPU("1").Group("fits").Obj())
	}
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=fits", 3, timeout)
	env.CreatePodGroup(t, harness.PodGroup(ns, "nowhere", 3))
	for i := range 3 {
		p := harness.Pod(ns, fmt.Sprint("nowhere-", i)).CPU("100m").Group("nowhere").Obj()
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		env.CreatePod(t, p)
	}

	q := qapi.DefaultQueueName
	want := []struct {
		name   string
		labels map[string]string
	}{
		{"caldera_queue_deserved", map[string]string{"queue": q, "resource": "cpu"}},
		{"caldera_queue_allocated", map[string]string{"queue": q, "resource": "cpu"}},
		{"caldera_queue_share", map[string]string{"queue": q}},
		{"caldera_podgroups", map[string]string{"queue": q, "phase": "Scheduling"}},
		{"caldera_podgroups", map[string]string{"queue": q, "phase": "Pending"}},
		{"caldera_admission_wait_seconds", map[string]string{"queue": q}},
		{"caldera_gang_permit_wait_seconds", nil},
		{"caldera_gang_rejections_total", map[string]string{"reason": "unschedulable"}},
	}
	var missing []string
	last := ""
	harness.WaitFor(t, timeout, func() (bool, error) {
		families := scrape(t, s)
		missing = missing[:0]
		for _, w := range want {
			if !has(families, w.name, w.labels) {
				missing = append(missing, fmt.Sprintf("%s%v", w.name, w.labels))
			}
		}
		if m := fmt.Sprint(missing); len(missing) > 0 && m != last {
			t.Logf("not yet on /metrics: %s", m)
			last = m
		}
		return len(missing) == 0, nil
	}, "Caldera metrics on the scheduler's /metrics")
	if len(missing) > 0 {
		t.Fatalf("missing metrics: %v", missing)
	}

	families := scrape(t, s)
	// The gang's 3 cores are allocated to its queue; its wait in Permit and
	// its admission were observed.
	for _, m := range families["caldera_queue_allocated"].GetMetric() {
		if testutil.LabelsMatch(m, map[string]string{"queue": q, "resource": "cpu"}) && m.GetGauge().GetValue() != 3 {
			t.Errorf("%s = %v, want 3 cores", series("caldera_queue_allocated", m), m.GetGauge().GetValue())
		}
	}
	for _, name := range []string{"caldera_gang_permit_wait_seconds", "caldera_admission_wait_seconds"} {
		var n uint64
		for _, m := range families[name].GetMetric() {
			n += m.GetHistogram().GetSampleCount()
		}
		if n == 0 {
			t.Errorf("%s has no samples", name)
		}
	}
	for name, f := range families {
		if !strings.HasPrefix(name, "caldera_") {
			continue
		}
		if !strings.Contains(f.GetHelp(), "[ALPHA]") {
			t.Errorf("%s help %q: want an ALPHA metric", name, f.GetHelp())
		}
	}

	// SIGUSR1 writes the cache as JSON to CALDERA_DUMP_DIR.
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var dumpFile string
	harness.WaitFor(t, timeout, func() (bool, error) {
		matches, err := filepath.Glob(filepath.Join(dumpDir, "caldera-cache-*.json"))
		if len(matches) > 0 {
			dumpFile = matches[0]
		}
		return len(matches) > 0, err
	}, "a cache dump in "+dumpDir+" after SIGUSR1")
	data, err := os.ReadFile(dumpFile)
	if err != nil {
		t.Fatal(err)
	}
	var dump struct {
		Cluster struct {
			Nodes       int              `json:"nodes"`
			Allocatable map[string]int64 `json:"allocatable"`
		} `json:"cluster"`
		Queues []struct {
			Name      string           `json:"name"`
			Deserved  map[string]int64 `json:"deserved"`
			Allocated map[string]int64 `json:"allocated"`
			Share     float64          `json:"share"`
		} `json:"queues"`
		Groups []struct {
			Key      string         `json:"key"`
			Queue    string         `json:"queue"`
			Phase    string         `json:"phase"`
			Admitted bool           `json:"admitted"`
			Counts   map[string]int `json:"counts"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(data, &dump); err != nil {
		t.Fatalf("dump %s is not the expected JSON: %v\n%s", dumpFile, err, data)
	}
	if dump.Cluster.Nodes < 2 || dump.Cluster.Allocatable["cpu"] < 8000 {
		t.Errorf("dump cluster = %+v, want at least the 2 nodes of 4 cpu", dump.Cluster)
	}
	foundQueue := false
	for _, dq := range dump.Queues {
		if dq.Name == q {
			foundQueue = true
			if dq.Allocated["cpu"] != 3000 {
				t.Errorf("dump queue %s allocated %v, want 3000m cpu", q, dq.Allocated)
			}
		}
	}
	if !foundQueue {
		t.Errorf("dump lacks queue %s: %s", q, data)
	}
	foundGroup := false
	for _, g := range dump.Groups {
		if g.Key == ns+"/fits" {
			foundGroup = true
			if g.Queue != q || g.Phase != "Scheduling" || !g.Admitted || g.Counts["bound"] != 3 {
				t.Errorf("dump group %+v, want queue %s, phase Scheduling, admitted, 3 bound", g, q)
			}
		}
	}
	if !foundGroup {
		t.Errorf("dump lacks group %s/fits: %s", ns, data)
	}
}
