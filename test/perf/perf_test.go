package perf

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

var (
	flagSize      = flag.String("perf.size", "", "workload size to run: quick or full; empty skips TestPerf")
	flagOut       = flag.String("perf.out", "", "directory for results.json and results.md (default <repo>/bench-results)")
	flagRuns      = flag.Int("perf.runs", 1, "runs of every (workload, profile); ratios use the medians")
	flagWorkloads = flag.String("perf.workloads", "", "comma-separated workloads to run (default all)")
	flagProfiles  = flag.String("perf.profiles", "", "comma-separated profiles to run (default all: default,caldera,upstream-gang)")
	flagPprof     = flag.String("perf.pprof", "", "directory for CPU and heap profiles of each run (whole process)")
	flagStream    = flag.Bool("perf.stream", false, "create pods while the scheduler runs (default: all pods exist before it starts)")
	flagPrebound  = flag.Int("perf.prebound", 0, "override the size's number of already-bound pods of W5")
	flagChurnFor  = flag.Duration("perf.churn-for", 0, "override the size's time gangs arrive in W6 (the scheduler's Event cache keeps each Event 6-12 minutes: judge heap flatness beyond that)")
	flagTimeout   = flag.Duration("perf.timeout", 10*time.Minute, "bound on one workload's scheduling")
	flagChild     = flag.Bool("perf.child", false, "internal: run in the process a parent started for one (workload, profile), see runIsolated")

	flagExtCmd     = flag.String("perf.external-cmd", "", "measure the scheduler this command starts ({kubeconfig}, {config} substituted) instead of the in-process profiles")
	flagExtConfig  = flag.String("perf.external-config", "manifests/scheduler/config.yaml", "configuration behind {config}, relative to the repository root")
	flagExtName    = flag.String("perf.external-scheduler", harness.DefaultSchedulerName, "spec.schedulerName of the pods, external mode")
	flagExtGang    = flag.String("perf.external-gang", string(GangCaldera), "gang form, external mode: none, caldera, upstream")
	flagExtMetrics = flag.String("perf.external-metrics", "", "the external scheduler's /metrics URL, e.g. https://127.0.0.1:10259/metrics")
)

// TestPerf runs the workloads of -perf.size under every profile, one fresh
// control plane per (workload, profile, run), and writes the report. It
// never fails on a target; it fails only when it cannot run.
func TestPerf(t *testing.T) {
	if *flagSize == "" {
		t.Skip("benchmark workloads run only with -perf.size (make bench, make bench-full)")
	}
	workloads, err := Sizes(*flagSize)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CALDERA_SCHED_V") == "" {
		// Per-pod scheduler logs would cost more than the scheduling.
		t.Setenv("CALDERA_SCHED_V", "0")
	}
	if *flagPrebound > 0 {
		for i := range workloads {
			if workloads[i].Prebound > 0 {
				workloads[i].Prebound = *flagPrebound
			}
		}
	}
	if *flagChurnFor > 0 {
		for i := range workloads {
			if c := workloads[i].Churn; c != nil {
				longer := *c
				longer.Duration = *flagChurnFor
				workloads[i].Churn = &longer
				workloads[i].Groups = longer.gangs()
			}
		}
	}
	root := harness.RepoRoot(t)
	profiles := Profiles()
	opts := Options{Timeout: *flagTimeout, ProfileDir: *flagPprof, Stream: *flagStream}
	if opts.ProfileDir != "" {
		if err := os.MkdirAll(opts.ProfileDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if *flagExtCmd != "" {
		ext := &External{
			Command:    *flagExtCmd,
			ConfigFile: filepath.Join(root, *flagExtConfig),
			MetricsURL: *flagExtMetrics,
			Profile:    Profile{Name: ProfileExternal, SchedulerName: *flagExtName, Gang: GangKind(*flagExtGang)},
		}
		if ext.Profile.Gang == GangUpstream {
			for _, p := range profiles {
				if p.Name == ProfileUpstream {
					ext.Profile.envOptions = p.envOptions // GenericWorkload on the apiserver
				}
			}
		}
		opts.External = ext
		profiles = []Profile{ext.Profile}
		for i := range workloads {
			workloads[i].Profiles = []string{ProfileExternal}
		}
	}

	out := *flagOut
	if out == "" {
		out = filepath.Join(root, "bench-results")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	report := &Report{Size: *flagSize, Started: time.Now(), Machine: DescribeMachine()}
	for run := 1; run <= *flagRuns; run++ {
		for _, w := range workloads {
			if !selected(*flagWorkloads, w.Name) {
				continue
			}
			for _, p := range profiles {
				if !slices.Contains(w.Profiles, p.Name) || (p.GangOnly && !w.Gang) || !selected(*flagProfiles, p.Name) {
					continue
				}
				t.Run(w.Name+"/"+p.Name, func(t *testing.T) {
					var res Result
					if (w.LiveHeap || w.Churn != nil) && opts.External == nil && !*flagChild {
						res = runIsolated(t, w, p, filepath.Join(out, fmt.Sprintf("child-%s-%s-%d.log", w.Name, p.Name, run)))
					} else {
						res = Run(t, w, p, opts)
					}
					res.Run = run
					report.Results = append(report.Results, res)
				})
			}
		}
	}
	report.ComputeRatios()
	var md strings.Builder
	if err := report.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	jsonFile, err := os.Create(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer jsonFile.Close()
	if err := report.WriteJSON(jsonFile); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("results in %s:\n%s", out, md.String())
}

// runIsolated runs (w, p) in a new process of this test binary and returns
// its result; the child's output goes to logFile. W5 and W6 run their
// scheduler in a process of its own (M1 and W6's windows read that
// process's heap), a grandchild then, but still get a fresh control plane
// process: their timing is not taxed by the GC of what earlier runs left
// (a stopped in-process control plane and scheduler stay reachable for a
// while: 30-60 MiB a run at 10,000 pods, measured).
func runIsolated(t *testing.T, w Workload, p Profile, logFile string) Result {
	dir := t.TempDir()
	override := map[string]bool{"perf.workloads": true, "perf.profiles": true, "perf.runs": true, "perf.out": true, "perf.child": true}
	args := []string{"-test.run=^TestPerf$", "-test.v", "-test.timeout=0", "-perf.child",
		"-perf.workloads=" + w.Name, "-perf.profiles=" + p.Name, "-perf.runs=1", "-perf.out=" + dir}
	flag.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "perf.") && !override[f.Name] {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	fail := func(err error) Result {
		t.Logf("%s/%s in a child process: %v (log %s)", w.Name, p.Name, err, logFile)
		return Result{Workload: w.Name, Profile: p.Name, Nodes: w.Nodes, Pods: w.Pods(), Prebound: w.Prebound, Error: err.Error()}
	}
	log, err := os.Create(logFile)
	if err != nil {
		return fail(err)
	}
	defer log.Close()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fail(fmt.Errorf("child: %w", err))
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return fail(err)
	}
	var child Report
	if err := json.Unmarshal(data, &child); err != nil {
		return fail(err)
	}
	if len(child.Results) != 1 {
		return fail(fmt.Errorf("child reported %d results, want 1", len(child.Results)))
	}
	res := child.Results[0]
	detail := fmt.Sprintf("the scheduler process holds %.0f MiB of live heap", heldHeap(res))
	if len(res.Windows) > 0 {
		detail = windowSummary(res.Windows)
	}
	t.Logf("%s/%s (child process, log %s): %d/%d bound, first bind %.1fs, %s %s",
		w.Name, p.Name, logFile, res.Bound, res.Pods, res.FirstBindSeconds, detail, res.Error)
	return res
}

// selected reports whether name is in the comma-separated list (an empty
// list selects everything).
func selected(list, name string) bool {
	return list == "" || slices.Contains(strings.Split(list, ","), name)
}
