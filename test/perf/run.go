package perf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	// createWorkers create objects in parallel, as a Job controller storm would.
	createWorkers = 16
	// sampleInterval is the throughput sampling period (scheduler_perf: 1s).
	sampleInterval = time.Second
	// memInterval is the memory sampling period.
	memInterval = 500 * time.Millisecond
	// attemptMetric is the scheduler's own scheduling-attempt histogram.
	attemptMetric = "scheduler_scheduling_attempt_duration_seconds"
	// probeTimeout bounds the wait for the scheduler to bind the probe pod.
	probeTimeout = 2 * time.Minute
	// schedulerStartTimeout bounds a scheduler's start (its first /readyz).
	schedulerStartTimeout = 5 * time.Minute
	// M1 waits liveHeapSettle after the last bind (Caldera writes the
	// status of every PodGroup it found), then takes the least of at least
	// liveHeapSamples samples 2 s apart, more while the heap still falls,
	// up to liveHeapMaxWait.
	liveHeapSettle  = 10 * time.Second
	liveHeapSamples = 5
	liveHeapMaxWait = time.Minute
)

// Options are the run-wide settings.
type Options struct {
	// Timeout bounds one workload's scheduling (all pods bound).
	Timeout time.Duration
	// External, when set, measures a scheduler started by a command instead
	// of the in-process profiles.
	External *External
	// Stream creates the pods while the scheduler runs (the clock starts at
	// the first create) instead of before it starts.
	Stream bool
	// ProfileDir, when set, receives a CPU profile and a mutex-contention
	// profile of the whole process (apiserver, etcd, scheduler, harness;
	// not the scheduler when it runs in a process of its own) from the
	// scheduler's start to the last bind, and a heap profile at the last
	// bind, per run; W5 adds the scheduler process's heap profile when its
	// live heap is read (heap-live-<workload>-<profile>.pprof).
	ProfileDir string
}

// metricsSource reads the scheduler's attempt-latency histogram for the
// series whose labels include match.
type metricsSource func(ctx context.Context, match map[string]string) (histogram, error)

// inProcessMetrics gathers from the process's legacy registry, where the
// in-process scheduler registers its metrics (once per process: the
// counters carry over from run to run, so every run takes a difference).
func inProcessMetrics(_ context.Context, match map[string]string) (histogram, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return histogram{}, err
	}
	return histogramOf(families, attemptMetric, match), nil
}

// Run measures workload w under profile p on a fresh control plane.
// Failures are recorded in Result.Error (and logged), not fatal, so one
// broken profile leaves the others' numbers in the report.
//
// By default (backlog) every pod exists before the scheduler starts, so the
// numbers measure scheduling and binding, not how fast this machine creates
// pods; the clock starts when the scheduler is started. With opts.Stream the
// scheduler runs first and the clock starts at the first create.
func Run(t *testing.T, w Workload, p Profile, opts Options) Result {
	if w.Churn != nil {
		return runChurn(t, w, p, opts)
	}
	res := Result{
		Workload: w.Name, Profile: p.Name, Nodes: w.Nodes, Pods: w.Pods(),
		Groups: w.Groups, GroupSize: w.GroupSize, Prebound: w.Prebound,
	}
	fail := func(err error) Result {
		res.Error = err.Error()
		t.Logf("%s/%s: %v", w.Name, p.Name, err)
		return res
	}
	ctx := t.Context()
	envOpts := append([]harness.EnvOption{harness.WithClientQPS(schedulerQPS, schedulerQPS)}, p.envOptions...)
	env := harness.StartWith(t, envOpts...)

	if err := createNodes(ctx, env, w); err != nil {
		return fail(err)
	}
	const ns = "perf"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fail(err)
	}
	if err := createGroups(ctx, env, w, p, ns); err != nil {
		return fail(err)
	}
	if err := createPrebound(ctx, env, w, p); err != nil {
		return fail(err)
	}
	evictions := func() int { return 0 }
	if w.Preempt != nil {
		var err error
		if evictions, err = createVictims(ctx, t, env, w, p); err != nil {
			return fail(err)
		}
	}
	watcher := newBindWatcher(env.Client, ns, w.Groups, w.GroupSize)
	if err := watcher.start(ctx); err != nil {
		return fail(err)
	}
	groupStart := make([]time.Time, w.Groups)
	if !opts.Stream {
		if err := createPods(ctx, env, w, p, ns, groupStart); err != nil {
			return fail(err)
		}
	}

	match := map[string]string{"profile": p.SchedulerName}
	scrape := metricsSource(inProcessMetrics)
	mem := &memSampler{}
	before, _ := scrape(ctx, match)
	timingsBefore := timingSnapshot(p.SchedulerName)
	runtime.GC() // the previous run's garbage must not count as this run's peak
	memCtx, stopMem := context.WithCancel(ctx)
	defer stopMem()
	var memDone sync.WaitGroup

	stopProfile := startCPUProfile(t, opts.ProfileDir, w.Name+"-"+p.Name)
	cpuBefore := cpuSeconds(0)
	start := time.Now()
	proc, err := startScheduler(t, env, w, p, opts)
	if err != nil {
		stopProfile()
		return fail(err)
	}
	if proc != nil {
		mem.pid, scrape, before = proc.pid, proc.scrape, histogram{}
	}
	memDone.Go(func() { mem.run(memCtx, memInterval) })
	if !opts.Stream {
		for g := range groupStart {
			groupStart[g] = start // every group waits from the start
		}
	} else {
		// A probe pod pinned to the last node proves the scheduler runs and
		// has seen every node (one watch delivers them in order).
		if err := probe(ctx, env, p, w.Nodes-1); err != nil {
			stopProfile()
			return fail(err)
		}
		if h, err := scrape(ctx, match); err == nil {
			before = h
		}
		start = time.Now()
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go watcher.sample(sampleCtx, sampleInterval)
	createErr := make(chan error, 1)
	var created time.Time
	go func() {
		var err error
		if opts.Stream {
			err = createPods(ctx, env, w, p, ns, groupStart)
		}
		created = time.Now()
		createErr <- err
	}()

	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	createDone := false
wait:
	for {
		select {
		case <-watcher.done:
			break wait
		case err := <-createErr:
			createDone, createErr = true, nil
			if err != nil {
				res.Error = err.Error()
				break wait
			}
		case <-timer.C:
			res.Error = fmt.Sprintf("timed out after %v: %d/%d pods bound", opts.Timeout, watcher.boundCount(), w.Pods())
			break wait
		}
	}
	// A new process: all its CPU is this run's, start-up included.
	res.setCPU(proc, opts.External != nil, cpuBefore, procStat{})
	stopProfile()
	if opts.ProfileDir != "" && proc == nil {
		res.SchedulerCPUSeconds = schedulerCPU(t, filepath.Join(opts.ProfileDir, "cpu-"+w.Name+"-"+p.Name+".pprof"))
	}
	// Creation ends before the last bind; wait for it so that groupStart and
	// created are read after their writer is done.
	if !createDone {
		if err := <-createErr; err != nil && res.Error == "" {
			res.Error = err.Error()
		}
	}
	if opts.Stream {
		res.CreateSeconds = created.Sub(start).Seconds()
	}
	stopSampling()
	stopMem()
	memDone.Wait()

	watcher.mu.Lock()
	last := watcher.lastBind
	if !watcher.firstBind.IsZero() {
		res.FirstBindSeconds = watcher.firstBind.Sub(start).Seconds()
	}
	samples := throughputSamples(watcher.samples, sampleInterval)
	res.Bound = len(watcher.bound)
	var gangTimes []float64
	if w.GroupSize > 1 {
		for g, done := range watcher.groupDone {
			if !done.IsZero() && !groupStart[g].IsZero() {
				gangTimes = append(gangTimes, done.Sub(groupStart[g]).Seconds())
			}
		}
	}
	watcher.mu.Unlock()

	if res.Bound > 0 {
		res.Seconds = last.Sub(start).Seconds()
		res.PodsPerSecAvg = float64(res.Bound) / res.Seconds
		res.PodsPerSecP50 = percentile(samples, 50)
	}
	res.GangBindP50, res.GangBindP99, res.GangBindMax = percentile(gangTimes, 50), percentile(gangTimes, 99), percentile(gangTimes, 100)
	res.PeakHeapMiB = mib(mem.peakHeap)
	res.PeakRSSMiB = mib(mem.peakRSS)
	if w.LiveHeap && res.Error == "" && proc != nil && proc.endpoints != nil {
		// The scheduler has listed everything (it bound the new pod);
		// its status writes settle within a few seconds.
		time.Sleep(liveHeapSettle)
		live, trace, err := liveHeapStable(ctx, proc.endpoints.liveHeap, liveHeapSamples, 2*time.Second, liveHeapMaxWait)
		if err != nil {
			t.Logf("%s/%s: reading the scheduler's live heap: %v", w.Name, p.Name, err)
		}
		res.LiveHeapMiB = mib(live)
		saveLiveHeapProfile(ctx, t, proc, opts.ProfileDir, w.Name+"-"+p.Name)
		t.Logf("%s/%s: scheduler process's live heap after the run: %s MiB", w.Name, p.Name, strings.Join(trace, " "))
	}
	res.Evictions = evictions()
	if proc == nil {
		res.Timings = timingsBetween(timingsBefore, timingSnapshot(p.SchedulerName))
	}
	if after, err := scrape(context.WithoutCancel(ctx), match); err == nil {
		h := after.sub(before)
		res.Attempts = int(h.total())
		res.AttemptP50Ms = h.quantile(0.50) * 1000
		res.AttemptP99Ms = h.quantile(0.99) * 1000
	} else {
		t.Logf("%s/%s: reading metrics: %v", w.Name, p.Name, err)
	}
	t.Logf("%s/%s: %d/%d pods bound in %.1fs (created by %.1fs, first bind at %.1fs, %.1f CPU s): %.0f pods/s (p50 %.0f), attempt p50 %.2fms p99 %.2fms, gang p50 %.2fs max %.2fs, peak heap %.0f MiB RSS %.0f MiB %s",
		w.Name, p.Name, res.Bound, res.Pods, res.Seconds, res.CreateSeconds, res.FirstBindSeconds, res.CPUSeconds, res.PodsPerSecAvg, res.PodsPerSecP50, res.AttemptP50Ms, res.AttemptP99Ms,
		res.GangBindP50, res.GangBindMax, res.PeakHeapMiB, res.PeakRSSMiB, res.Error)
	return res
}

// setCPU sets res's CPU figures at the end of a run: this process's CPU
// since selfBefore plus, when the scheduler has a process of its own, that
// process's since procBefore (zero for a process started within the run),
// which is also SchedulerCPUSeconds, with its kernel part and page faults;
// in external mode only the scheduler process's.
func (res *Result) setCPU(proc *schedulerProc, external bool, selfBefore float64, procBefore procStat) {
	res.CPUSeconds = cpuSeconds(0) - selfBefore
	if proc == nil {
		return
	}
	st := readProcStat(proc.pid).sub(procBefore)
	res.SchedulerSysSeconds, res.SchedulerFaults = st.sys, st.faults
	if external {
		res.CPUSeconds = st.cpu
		return
	}
	res.CPUSeconds += st.cpu
	res.SchedulerCPUSeconds = st.cpu
}

// saveLiveHeapProfile writes, when dir is set, the scheduler process's heap
// profile after a forced collection to dir/heap-live-<name>.pprof: where the
// live heap just measured goes, by allocation site.
func saveLiveHeapProfile(ctx context.Context, t *testing.T, proc *schedulerProc, dir, name string) {
	if dir == "" || proc == nil || proc.endpoints == nil {
		return
	}
	if err := proc.endpoints.saveHeapProfile(ctx, filepath.Join(dir, "heap-live-"+name+".pprof")); err != nil {
		t.Logf("scheduler heap profile: %v", err)
	}
}

// startScheduler starts profile p's scheduler and returns its process:
// the external command's; for workloads that read the scheduler's heap
// (W5's M1, W6's windows), the harness's scheduler process (the real
// command in a process of its own, as a restart would run it, so that its
// heap is its own and not shared with etcd's and the apiserver's);
// otherwise the in-process scheduler (nil).
func startScheduler(t *testing.T, env *harness.Env, w Workload, p Profile, opts Options) (*schedulerProc, error) {
	if opts.External != nil {
		return opts.External.start(t, env)
	}
	// At 5000 nodes and thousands of pods and groups, a scheduler on 2
	// shared cores can take more than a test's 60 s to sync its handlers.
	schedOpts := append(p.schedulerOptions(env.RepoRoot), harness.WithStartTimeout(schedulerStartTimeout))
	if w.schedulerProcess() {
		sp := env.StartSchedulerProcess(t, schedOpts...)
		endpoints, err := newSchedulerEndpoints(fmt.Sprintf("https://127.0.0.1:%d/metrics", sp.Port))
		if err != nil {
			return nil, err
		}
		return &schedulerProc{pid: sp.Pid(), endpoints: endpoints}, nil
	}
	// Goroutines inherit pprof labels from the goroutine that starts them:
	// everything the scheduler starts carries component=scheduler, so
	// `go tool pprof -tagfocus=component=scheduler` separates its CPU from
	// the apiserver's and etcd's in the whole-process profiles.
	ctx := t.Context()
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("component", "scheduler")))
	env.StartScheduler(t, schedOpts...)
	pprof.SetGoroutineLabels(ctx)
	return nil, nil
}

// parallel runs f(0..n-1) on createWorkers goroutines and returns the first
// error.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(createWorkers, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// createNodes creates w's Ready nodes.
func createNodes(ctx context.Context, env *harness.Env, w Workload) error {
	return parallel(ctx, w.Nodes, func(ctx context.Context, i int) error {
		nd := w.rackNode(i)
		status := nd.Status
		created, err := env.Client.CoreV1().Nodes().Create(ctx, nd, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", nd.Name, err)
		}
		created.Status = status // create drops status
		if _, err := env.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s status: %w", nd.Name, err)
		}
		return nil
	})
}

// probe creates a pod pinned (by node selector) to node i and waits until
// it is bound.
func probe(ctx context.Context, env *harness.Env, p Profile, i int) error {
	ns := "perf-probe"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	pod := harness.Pod(ns, "probe").CPU(podCPU).Scheduler(p.SchedulerName).
		NodeSelector(map[string]string{v1.LabelHostname: node(i).Name}).Obj()
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating probe pod: %w", err)
	}
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=probe"})
	if err != nil {
		return err
	}
	defer w.Stop()
	timeout := time.NewTimer(probeTimeout)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("probe pod watch closed")
			}
			if pod, ok := ev.Object.(*v1.Pod); ok && pod.Spec.NodeName != "" {
				return nil
			}
		case <-timeout.C:
			return fmt.Errorf("the scheduler did not bind a probe pod within %v", probeTimeout)
		}
	}
}

// createGroups creates the workload's gang objects for profile p.
func createGroups(ctx context.Context, env *harness.Env, w Workload, p Profile, ns string) error {
	if !w.Gang || p.Gang == GangNone {
		return nil
	}
	return parallel(ctx, w.Groups, func(ctx context.Context, g int) error {
		return createGroup(ctx, env, w, p, ns, g)
	})
}

// createGroup creates gang g's group object in the form profile p expects
// (none for profiles without gang semantics).
func createGroup(ctx context.Context, env *harness.Env, w Workload, p Profile, ns string, g int) error {
	var err error
	switch p.Gang {
	case GangCaldera:
		_, err = env.PGClient.SchedulingV1alpha1().PodGroups(ns).Create(ctx, w.calderaGroup(ns, g), metav1.CreateOptions{})
	case GangUpstream:
		_, err = env.Client.SchedulingV1beta1().PodGroups(ns).Create(ctx, w.upstreamGroup(ns, g), metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating group %s: %w", groupName(g), err)
	}
	return nil
}

// createPrebound creates the workload's already-bound pods in their own
// namespace, which the bind watcher does not watch.
func createPrebound(ctx context.Context, env *harness.Env, w Workload, p Profile) error {
	if w.Prebound == 0 {
		return nil
	}
	const ns = "perf-bound"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// Every profile's cluster holds the bound gangs' PodGroups, as its pods
	// carry their label: a scheduler that ignores them still shares the
	// machine with an apiserver that keeps and serves them.
	if w.preboundGangs() > 0 {
		err := parallel(ctx, w.preboundGangs(), func(ctx context.Context, g int) error {
			pg := w.boundGroup(ns, g)
			pgs := env.PGClient.SchedulingV1alpha1().PodGroups(ns)
			created, err := pgs.Create(ctx, pg, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating bound group %s: %w", pg.Name, err)
			}
			// Create drops the status; an earlier process wrote it.
			created.Status = pg.Status
			if _, err := pgs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("writing bound group %s's status: %w", pg.Name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return parallel(ctx, w.Prebound, func(ctx context.Context, i int) error {
		pod := w.boundPod(ns, p, i)
		if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating bound pod %s: %w", pod.Name, err)
		}
		return nil
	})
}

// createPods creates every pod, group by group in order, recording when
// each group's first pod was sent.
func createPods(ctx context.Context, env *harness.Env, w Workload, p Profile, ns string, groupStart []time.Time) error {
	var mu sync.Mutex
	return parallel(ctx, w.Pods(), func(ctx context.Context, i int) error {
		g, m := i/w.GroupSize, i%w.GroupSize
		if m == 0 {
			mu.Lock()
			groupStart[g] = time.Now()
			mu.Unlock()
		}
		pod := w.pod(ns, p, g, m)
		if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		return nil
	})
}

// startCPUProfile starts a CPU profile into dir/cpu-<name>.pprof, if dir is
// set; the returned function stops it and writes dir/heap-<name>.pprof.
func startCPUProfile(t *testing.T, dir, name string) func() {
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, "cpu-"+name+".pprof"))
	if err != nil {
		t.Logf("cpu profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Logf("cpu profile: %v", err)
		f.Close()
		return func() {}
	}
	// Contention too: where goroutines wait on locks, not only where CPU goes.
	runtime.SetMutexProfileFraction(10)
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		runtime.SetMutexProfileFraction(0)
		if m, err := os.Create(filepath.Join(dir, "mutex-"+name+".pprof")); err == nil {
			if err := pprof.Lookup("mutex").WriteTo(m, 0); err != nil {
				t.Logf("mutex profile: %v", err)
			}
			m.Close()
		}
		writeHeapProfile(t, filepath.Join(dir, "heap-"+name+".pprof"))
	}
}

// writeHeapProfile writes the process's heap profile to path.
func writeHeapProfile(t *testing.T, path string) {
	h, err := os.Create(path)
	if err != nil {
		t.Logf("heap profile: %v", err)
		return
	}
	defer h.Close()
	if err := pprof.Lookup("heap").WriteTo(h, 0); err != nil {
		t.Logf("heap profile: %v", err)
	}
}

// schedulerCPU is the CPU time of the goroutines labelled component=scheduler
// in a CPU profile, from `go tool pprof -tags` (0 when it cannot tell).
func schedulerCPU(t *testing.T, profile string) float64 {
	out, err := exec.Command("go", "tool", "pprof", "-tags", profile).Output()
	if err != nil {
		t.Logf("go tool pprof -tags %s: %v", profile, err)
		return 0
	}
	for line := range strings.Lines(string(out)) {
		value, label, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.HasSuffix(strings.TrimSpace(label), ": scheduler") {
			continue
		}
		if d, err := time.ParseDuration(value); err == nil {
			return d.Seconds()
		}
	}
	return 0
}
