package upstream

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestRunConfig: the caldera run's copy of a workload file differs only
// by each test case's schedulerConfigPath; the default run uses the file.
func TestRunConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "performance-config.yaml")
	orig := `- name: A
  workloadTemplate:
  - opcode: createNodes
    countParam: $n
  workloads:
  - name: 5Nodes
    threshold: 10
    params: {n: 5}
- name: B
  workloadTemplate: []
  workloads:
  - name: W
    threshold: {default: 3, other: 4}
`
	if err := os.WriteFile(file, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := runConfig(file, "", dir); err != nil || got != file {
		t.Fatalf("default profile: %q, %v; want the file itself", got, err)
	}
	got, err := runConfig(file, "/x/caldera.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var want, have []map[string]any
	if err := yaml.Unmarshal([]byte(orig), &want); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(got)
	if err := yaml.Unmarshal(data, &have); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if have[i]["schedulerConfigPath"] != "/x/caldera.yaml" {
			t.Errorf("case %d: schedulerConfigPath = %v", i, have[i]["schedulerConfigPath"])
		}
		delete(have[i], "schedulerConfigPath")
	}
	a, _ := yaml.Marshal(want)
	b, _ := yaml.Marshal(have)
	if string(a) != string(b) {
		t.Errorf("the copy changed more than schedulerConfigPath:\n%s\nvs\n%s", a, b)
	}
	th := map[string]float64{}
	if err := readThresholds(file, th); err != nil {
		t.Fatal(err)
	}
	if th["A/5Nodes"] != 10 || th["B/W"] != 3 {
		t.Errorf("thresholds = %v, want A/5Nodes 10 and B/W the default topic's 3", th)
	}
}

// TestWriteCalderaConfig: the shipped batch profile serves default-scheduler
// alone, its plugins intact.
func TestWriteCalderaConfig(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.yaml")
	if err := writeCalderaConfig(filepath.Join(repoRoot(t), "manifests", "scheduler", "config.yaml"), out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	var cfg struct {
		LeaderElection any `json:"leaderElection"`
		Profiles       []struct {
			SchedulerName string `json:"schedulerName"`
			Plugins       struct {
				PostFilter struct {
					Enabled []struct{ Name string } `json:"enabled"`
				} `json:"postFilter"`
			} `json:"plugins"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "default-scheduler" || cfg.LeaderElection != nil {
		t.Fatalf("config = %+v, want one default-scheduler profile and no leader election", cfg)
	}
	if pf := cfg.Profiles[0].Plugins.PostFilter.Enabled; len(pf) == 0 || pf[0].Name != "CalderaReclaim" {
		t.Errorf("postFilter = %+v, want Caldera's", pf)
	}
}

// TestSummarize: both profiles' data items become one row per workload
// with the threshold and the throughput ratio.
func TestSummarize(t *testing.T) {
	kube := t.TempDir()
	for _, wf := range workloadFiles {
		d := filepath.Join(kube, wf.Dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := "- name: SchedulingBasic\n  workloads:\n  - name: 500Nodes\n    threshold: 100\n"
		if wf.Name != "misc" {
			cfg = "- name: Other\n  workloads: []\n"
		}
		if err := os.WriteFile(filepath.Join(d, "performance-config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	for p, avg := range map[string]string{"default": "200", "caldera": "150"} {
		if err := os.MkdirAll(filepath.Join(out, p), 0o755); err != nil {
			t.Fatal(err)
		}
		items := `{"version":"v1","dataItems":[{"data":{"Average":` + avg + `},"unit":"pods/s","labels":{"Metric":"SchedulingThroughput","Name":"BenchmarkUpstream/misc/SchedulingBasic/500Nodes/namespace-2"}},` +
			`{"data":{"Perc50":1},"unit":"ms","labels":{"Metric":"scheduler_framework_extension_point_duration_seconds","Name":"SchedulingBasic/500Nodes"}}]}`
		if err := os.WriteFile(filepath.Join(out, p, "x.json"), []byte(items), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := summarize(out, kube)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rows) != 1 {
		t.Fatalf("rows = %+v, want one", s.Rows)
	}
	r := s.Rows[0]
	if r.Workload != "SchedulingBasic/500Nodes" || r.Threshold != 100 || r.Ratio != 0.75 || len(r.Profiles["caldera"]) != 1 {
		t.Errorf("row = %+v", r)
	}
}
