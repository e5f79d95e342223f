// Package upstream runs Kubernetes' own scheduler benchmark,
// k8s.io/kubernetes/test/integration/scheduler_perf, on its own workload
// files with kube-scheduler's default profile and with Caldera's, and
// summarizes both side by side with upstream's thresholds
// (docs/performance.md, make bench-upstream).
package upstream

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// workloadFile is one of upstream's scheduler_perf workload files, by its
// directory under k8s.io/kubernetes.
type workloadFile struct {
	// Name is the sub-benchmark's name (select with -bench).
	Name string
	// Dir holds performance-config.yaml and the templates it names.
	Dir string
}

// workloadFiles are the files make bench-upstream runs: SchedulingBasic
// (misc) and upstream's gang scheduling on its PodGroup API.
var workloadFiles = []workloadFile{
	{Name: "misc", Dir: "test/integration/scheduler_perf/misc"},
	{Name: "gangscheduling", Dir: "test/integration/scheduler_perf/podgroup/gangscheduling"},
}

// kubernetesDir is the k8s.io/kubernetes module's directory, the version
// go.mod pins.
func kubernetesDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m k8s.io/kubernetes: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// repoRoot is the repository root: the directory above test/perf/upstream.
func repoRoot(t testing.TB) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..", "..")
}

// runConfig returns the workload file to run: file itself when
// schedulerConfig is empty, else a copy in dir whose test cases all set
// schedulerConfigPath to it, the field through which scheduler_perf takes a
// scheduler configuration. Nothing else of the file changes.
func runConfig(file, schedulerConfig, dir string) (string, error) {
	if schedulerConfig == "" {
		return file, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var cases []map[string]any
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	for _, tc := range cases {
		if _, ok := tc["schedulerConfigPath"]; ok {
			return "", fmt.Errorf("%s: test case %v sets its own schedulerConfigPath", file, tc["name"])
		}
		tc["schedulerConfigPath"] = schedulerConfig
	}
	out, err := yaml.Marshal(cases)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.Base(file))
	return path, os.WriteFile(path, out, 0o644)
}

// writeCalderaConfig writes to out the shipped configuration's first
// profile (caldera-scheduler, batch) renamed default-scheduler, the name
// upstream's pod templates use, as the only profile. scheduler_perf reads
// profiles only: leader election and client settings are its own.
func writeCalderaConfig(shipped, out string) error {
	data, err := os.ReadFile(shipped)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", shipped, err)
	}
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) == 0 {
		return fmt.Errorf("%s: no profiles", shipped)
	}
	first, _ := profiles[0].(map[string]any)
	if first == nil || first["schedulerName"] != "caldera-scheduler" {
		return fmt.Errorf("%s: the first profile is not caldera-scheduler", shipped)
	}
	first["schedulerName"] = "default-scheduler"
	cfg["profiles"] = []any{first}
	delete(cfg, "leaderElection")
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// dataItem is one result of scheduler_perf's JSON output.
type dataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

// Measure is one metric of one profile's run of a workload.
type Measure struct {
	Unit string             `json:"unit"`
	Data map[string]float64 `json:"data"`
}

// Row is one workload: each profile's throughput and attempt latency, and
// upstream's threshold on the average throughput (0: none in the file).
type Row struct {
	Workload  string                        `json:"workload"`
	Threshold float64                       `json:"upstreamThreshold,omitempty"`
	Profiles  map[string]map[string]Measure `json:"profiles"`
	// Ratio is caldera's average throughput over default's.
	Ratio float64 `json:"throughputCalderaOverDefault,omitempty"`
}

// Summary is make bench-upstream's output.
type Summary struct {
	Rows []Row `json:"workloads"`
}

// JSON is the summary, indented.
func (s *Summary) JSON() ([]byte, error) { return json.MarshalIndent(s, "", "  ") }

// summaryMetrics are the metrics the summary keeps of each run.
var summaryMetrics = []string{"SchedulingThroughput", "scheduler_scheduling_attempt_duration_seconds"}

// summarize reads dir/<profile>/*.json and the thresholds of the workload
// files under kube.
func summarize(dir, kube string) (*Summary, error) {
	thresholds := map[string]float64{}
	for _, wf := range workloadFiles {
		if err := readThresholds(filepath.Join(kube, wf.Dir, "performance-config.yaml"), thresholds); err != nil {
			return nil, err
		}
	}
	rows := map[string]*Row{}
	for _, profile := range []string{"default", "caldera"} {
		files, _ := filepath.Glob(filepath.Join(dir, profile, "*.json"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var items struct {
				DataItems []dataItem `json:"dataItems"`
			}
			if err := json.Unmarshal(data, &items); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for _, it := range items.DataItems {
				metric := it.Labels["Metric"]
				if !slices.Contains(summaryMetrics, metric) || (it.Labels["extension_point"] != "" && it.Labels["extension_point"] != "not applicable") {
					continue
				}
				if r := it.Labels["result"]; r != "" && r != "not applicable" && r != "scheduled" {
					continue
				}
				name := workloadName(it.Labels["Name"])
				row := rows[name]
				if row == nil {
					row = &Row{Workload: name, Threshold: thresholds[name], Profiles: map[string]map[string]Measure{}}
					rows[name] = row
				}
				if row.Profiles[profile] == nil {
					row.Profiles[profile] = map[string]Measure{}
				}
				row.Profiles[profile][metric] = Measure{Unit: it.Unit, Data: it.Data}
			}
		}
	}
	s := &Summary{}
	for _, r := range rows {
		d, c := r.Profiles["default"]["SchedulingThroughput"], r.Profiles["caldera"]["SchedulingThroughput"]
		if d.Data["Average"] > 0 && c.Data["Average"] > 0 {
			r.Ratio = c.Data["Average"] / d.Data["Average"]
		}
		s.Rows = append(s.Rows, *r)
	}
	sort.Slice(s.Rows, func(i, j int) bool { return s.Rows[i].Workload < s.Rows[j].Workload })
	return s, nil
}

// workloadName is "<test case>/<workload>" of a data item's Name label,
// which scheduler_perf builds from the benchmark's name
// (BenchmarkUpstream/<file>/<test case>/<workload>) and may end with more.
func workloadName(name string) string {
	parts := strings.Split(name, "/")
	if len(parts) > 2 && strings.HasPrefix(parts[0], "Benchmark") {
		parts = parts[2:]
	}
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, "/")
}

// readThresholds adds every workload's threshold of a workload file to
// out, by "<test case>/<workload>": a single value, or the "default" topic's
// when the file gives one per topic.
func readThresholds(file string, out map[string]float64) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cases []struct {
		Name      string `json:"name"`
		Workloads []struct {
			Name      string `json:"name"`
			Threshold any    `json:"threshold"`
		} `json:"workloads"`
	}
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, tc := range cases {
		for _, w := range tc.Workloads {
			switch v := w.Threshold.(type) {
			case float64:
				out[tc.Name+"/"+w.Name] = v
			case map[string]any:
				if d, ok := v["default"].(float64); ok {
					out[tc.Name+"/"+w.Name] = d
				}
			}
		}
	}
	return nil
}
