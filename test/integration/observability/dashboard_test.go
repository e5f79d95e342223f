package observability_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/testutil"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// metricName finds the metrics a PromQL expression reads: Caldera's, the
// scheduler's and leader election's (what the dashboard and the alerts use).
var metricName = regexp.MustCompile(`\b(?:caldera|scheduler|leader_election)_[a-z_]+\b`)

// queried returns every metric name the dashboard's panels and the alert
// rules query, with the histogram suffixes cut (a family is exported under
// its base name), and which file asks for each.
func queried(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range []string{"dashboard.json", "prometheusrule.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "manifests", "components", "monitoring", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricName.FindAllString(string(data), -1) {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				m = strings.TrimSuffix(m, suffix)
			}
			if !containsString(out[m], f) {
				out[m] = append(out[m], f)
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d metrics in the dashboard and the alerts: %v", len(out), out)
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDashboardAndAlertsQueryExportedMetrics: every metric the shipped
// Grafana dashboard and PrometheusRule query is on a live scheduler's
// /metrics, so no panel stays empty and no alert watches a name that does
// not exist. The scheduler leads (leader election on the Lease the alert
// names), a gang binds, and a pod of higher priority preempts one, so every
// family has a series.
func TestDashboardAndAlertsQueryExportedMetrics(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	env.AddNodes(t, 1, "4", "8Gi")
	s := env.StartScheduler(t, harness.WithLeaderElection("caldera-scheduler"))
	s.WaitLeading(t, timeout)

	env.CreatePodGroup(t, harness.PodGroup(ns, "gang", 2))
	for _, name := range []string{"gang-0", "gang-1"} {
		env.CreatePod(t, harness.Pod(ns, name).CPU("1").Group("gang").Obj())
	}
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=gang", 2, timeout)
	env.CreatePod(t, harness.Pod(ns, "low").CPU("2").Priority(1).Obj())
	env.WaitBoundCount(t, ns, "", 3, timeout)
	env.CreatePod(t, harness.Pod(ns, "high").CPU("2").Priority(1000).Obj())

	want := queried(t, env.RepoRoot)
	var missing []string
	harness.WaitFor(t, timeout, func() (bool, error) {
		families := scrape(t, s)
		missing = missing[:0]
		for name := range want {
			if f := families[name]; f == nil || len(f.GetMetric()) == 0 {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, nil
	}, "every metric of the dashboard and the alerts on /metrics")
	if len(missing) > 0 {
		sort.Strings(missing)
		for _, m := range missing {
			t.Errorf("%s (queried by %v) is not on the scheduler's /metrics", m, want[m])
		}
	}
	// The no-leader alert selects kube-scheduler's elector by name (it is
	// "kube-scheduler" whatever the Lease): the series it reads must carry
	// it, and say this replica leads.
	families := scrape(t, s)
	led := false
	for _, m := range families["leader_election_master_status"].GetMetric() {
		if testutil.LabelsMatch(m, map[string]string{"name": "kube-scheduler"}) && m.GetGauge().GetValue() == 1 {
			led = true
		}
	}
	if !led {
		t.Errorf("no leader_election_master_status{name=\"kube-scheduler\"} = 1 on the leader: %v", families["leader_election_master_status"])
	}
}
