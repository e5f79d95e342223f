package upstream

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/caldera-sched/caldera/internal/localcluster"
	"github.com/caldera-sched/caldera/pkg/plugins/registry"
)

var (
	flagProfile = flag.String("upstream.profile", "", "default (kube-scheduler's defaults) or caldera (Caldera's batch profile serving default-scheduler); empty skips the benchmark")
	flagSummary = flag.String("upstream.summary", "", "directory holding <profile>/*.json from both profiles: TestSummary prints the side-by-side JSON summary")
)

// TestMain initialises scheduler_perf's flags (its own logging flags,
// -perf-scheduling-label-filter, -data-items-dir) as upstream's packages do.
func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// BenchmarkUpstream runs upstream's scheduler_perf on its own workload files
// (workloadFiles), unmodified, under -upstream.profile. The harness takes
// out-of-tree plugins as a registry and a scheduler configuration as each
// test case's schedulerConfigPath, which is all the caldera profile sets
// (runConfig); its workloads, parameters and thresholds are upstream's.
func BenchmarkUpstream(b *testing.B) {
	if *flagProfile == "" {
		b.Skip("runs only with -upstream.profile (make bench-upstream)")
	}
	root := repoRoot(b)
	kube, err := kubernetesDir()
	if err != nil {
		b.Fatal(err)
	}
	var reg runtime.Registry
	var opts []perf.SchedulerPerfOption
	schedulerConfig := ""
	switch *flagProfile {
	case "default":
	case "caldera":
		schedulerConfig = filepath.Join(b.TempDir(), "caldera-default-scheduler.yaml")
		if err := writeCalderaConfig(filepath.Join(root, "manifests", "scheduler", "config.yaml"), schedulerConfig); err != nil {
			b.Fatal(err)
		}
		plugins := registry.New()
		reg = runtime.Registry{}
		for _, o := range plugins.Options() {
			if err := o(reg); err != nil {
				b.Fatal(err)
			}
		}
		for name := range reg {
			perf.PluginNames = append(perf.PluginNames, name)
		}
		// After the API server and the scheduler start, before the first
		// object of the workload: Caldera's CRDs, then what its plugins
		// share (informers, admission loop), as cmd/scheduler starts it.
		opts = append(opts, perf.WithPrepareFn(func(tCtx ktesting.TContext) error {
			if _, err := localcluster.InstallCRDs(tCtx, tCtx.RESTConfig(), filepath.Join(root, "manifests", "crds")); err != nil {
				return err
			}
			return plugins.Start(tCtx)
		}))
	default:
		b.Fatalf("unknown -upstream.profile %q (default, caldera)", *flagProfile)
	}
	for _, wf := range workloadFiles {
		b.Run(wf.Name, func(b *testing.B) {
			dir := filepath.Join(kube, wf.Dir)
			config, err := runConfig(filepath.Join(dir, "performance-config.yaml"), schedulerConfig, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			// The files name their templates relative to their directory.
			b.Chdir(dir)
			perf.RunBenchmarkPerfScheduling(b, config, wf.Name+"_"+*flagProfile, reg, opts...)
		})
	}
}

// TestSummary prints, from both profiles' scheduler_perf JSON files, one
// JSON summary: per workload, each profile's SchedulingThroughput and
// attempt latency side by side with upstream's threshold from the file.
func TestSummary(t *testing.T) {
	if *flagSummary == "" {
		t.Skip("runs only with -upstream.summary (make bench-upstream)")
	}
	kube, err := kubernetesDir()
	if err != nil {
		t.Fatal(err)
	}
	s, err := summarize(*flagSummary, kube)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*flagSummary, "summary.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Println(string(out))
}
