package quality

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/test/integration/harness"
	"github.com/caldera-sched/caldera/test/quality/score"
	"github.com/caldera-sched/caldera/test/quality/trace"
)

var (
	flagOut         = flag.String("quality.out", "", "directory for results.json and results.md; empty skips TestQuality (make bench-quality)")
	flagSeed        = flag.Uint64("quality.seed", 1, "trace seed")
	flagNodes       = flag.Int("quality.nodes", 40, "nodes (8 cores, 32 GiB each)")
	flagArrivals    = flag.Duration("quality.arrivals", 6*time.Minute, "trace time over which jobs arrive (offering 1.6x capacity)")
	flagCompression = flag.Float64("quality.compression", 4, "trace time per wall second: arrivals and run times are divided by it")
	flagDrainEnd    = flag.Duration("quality.drain-end", 25*time.Minute, "trace time at which a run stops; jobs unfinished then count as deadlocked")
	flagStall       = flag.Duration("quality.stall", time.Minute, "wall time without a bind, completion or eviction, with no job running, after which a run stops as deadlocked")
	flagProfiles    = flag.String("quality.profiles", "", "comma-separated profiles (default all: default,caldera,upstream-gang, and external with -quality.external; caldera-lend, Caldera with lendIdleRoom on, and caldera-instant, Caldera with reservationsPerQueue 0, only when named)")

	// External mode: any scheduler, started by a command, on the same trace.
	flagExternal     = flag.String("quality.external", "", "external mode: a bash command starting the scheduler ({kubeconfig}: the cluster's kubeconfig; {config}: -quality.external-config rewritten to reach the cluster); its run is the profile -quality.external-name, after the in-process ones")
	flagExtConfig    = flag.String("quality.external-config", "manifests/scheduler/config.yaml", "KubeSchedulerConfiguration behind {config}, relative to the repository root")
	flagExtName      = flag.String("quality.external-name", "external", "the external run's profile name in the report")
	flagExtScheduler = flag.String("quality.external-scheduler-name", "caldera-scheduler", "spec.schedulerName of the pods in external mode")
	flagExtGang      = flag.String("quality.external-gang", "caldera", "how gangs are expressed in external mode: none, caldera (scheduler-plugins PodGroups and Caldera Queues) or upstream (scheduling.k8s.io/v1beta1)")
)

// TestQuality plays one seeded trace under every profile, each on a fresh
// control plane, and writes the report. It never fails on a target; it
// fails only when it cannot run.
func TestQuality(t *testing.T) {
	if *flagOut == "" {
		t.Skip("the quality benchmark runs only with -quality.out (make bench-quality)")
	}
	if os.Getenv("CALDERA_SCHED_V") == "" {
		t.Setenv("CALDERA_SCHED_V", "0")
	}
	params := trace.DefaultParams(*flagSeed)
	params.Nodes = *flagNodes
	params.ArrivalPhase = *flagArrivals
	tr := trace.Generate(params)
	opts := options{compression: *flagCompression, drainEnd: *flagDrainEnd, stall: *flagStall}
	rep := Report{
		Started: time.Now().UTC(), Params: params, Stats: tr.Stats(), Machine: machine(),
		Options: ReportOptions{
			Compression: opts.compression, DrainEnd: opts.drainEnd.String(), Stall: opts.stall.String(),
			StarvationThresholdSeconds: starvationThresholdSeconds,
		},
	}
	t.Logf("trace: %+v", rep.Stats)
	var want []string
	if *flagProfiles != "" {
		want = strings.Split(*flagProfiles, ",")
	}
	all := profiles()
	if *flagExternal != "" {
		cfg := *flagExtConfig
		if !filepath.IsAbs(cfg) {
			cfg = filepath.Join(harness.RepoRoot(t), cfg)
		}
		ext, err := externalProfile(*flagExtName, *flagExternal, cfg, *flagExtScheduler, *flagExtGang)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ext)
	}
	for _, p := range all {
		if want == nil && p.onRequest || want != nil && !slices.Contains(want, p.name) {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			began := time.Now()
			run := runProfile(t, p, tr, opts)
			if run.Error != "" {
				t.Logf("%s: %s", p.name, run.Error)
			}
			res := score.Score(run, params.Queues)
			t.Logf("%s: %v wall; utilization %.2f while contended, %d/%d jobs finished, makespan %.0fs, wait p95 %.0fs",
				p.name, time.Since(began).Round(time.Second), res.ContendedUtilization, res.Finished, len(run.Jobs), res.Makespan, res.All.P95)
			rep.Runs = append(rep.Runs, run)
			rep.Results = append(rep.Results, res)
		})
	}
	rep.Duration = time.Since(rep.Started).Round(time.Second).String()
	if err := os.MkdirAll(*flagOut, 0o755); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*flagOut, "results.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*flagOut, "results.md"), []byte(markdown(rep)), 0o644); err != nil {
		t.Fatal(err)
	}
}
