package perf

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// Churn makes a workload W6: gangs arrive at a fixed rate, each runs for a
// fixed time once bound and then finishes, as a Job's pods would on a
// cluster with kubelets and a Job controller.
//
// A gang finishes in two steps, because Caldera's cache has a path for each:
// RunTime after its last bind its pods are marked Succeeded through the
// status subresource (the kubelet's report: the cache sees a terminal member,
// the queue releases its quota while the pods still exist, the PodGroup's
// phase moves on), and Linger later the pods and the group are deleted (the
// Job's TTL clean-up and garbage collection: the cache drops the members, the
// group and its unit). Deleting at once would skip the first path; never
// deleting would grow every informer with the run, so memory could not be
// flat by construction.
type Churn struct {
	// Duration is how long gangs arrive.
	Duration time.Duration
	// GangsPerSec is the arrival rate, well below what the scheduler binds
	// at in W2, so a steady run keeps up and a decay shows as lost rate.
	GangsPerSec float64
	// RunTime is from a gang's last bind to its pods' Succeeded.
	RunTime time.Duration
	// Linger is from Succeeded to deletion.
	Linger time.Duration
	// Window is the reporting interval.
	Window time.Duration
}

// gangs is the number of gangs that arrive.
func (c Churn) gangs() int { return int(c.Duration.Seconds() * c.GangsPerSec) }

// windows is the number of whole windows while gangs arrive.
func (c Churn) windows() int { return int(c.Duration / c.Window) }

// firstSteady is the index of the first window that starts after the warm-up:
// by then the first gangs have run, finished and been deleted, so arrivals,
// completions and deletions all go on and the live population is steady.
func (c Churn) firstSteady() int {
	return int(math.Ceil(float64(c.RunTime+c.Linger) / float64(c.Window)))
}

// Window is one reporting interval of a churn run.
type Window struct {
	// StartSeconds is the window's start, from the first arrival.
	StartSeconds float64 `json:"startSeconds"`
	// Created, Bound and Finished count pods: of gangs that started being
	// created in the window, bound in it, and marked Succeeded in it.
	Created  int `json:"created"`
	Bound    int `json:"bound"`
	Finished int `json:"finished"`
	// BoundPerSec is Bound over the window's length.
	BoundPerSec float64 `json:"boundPerSec"`
	// GangBindP50 is the median, over the gangs whose last member was bound
	// in the window, of their creation to that bind, in seconds.
	GangBindP50 float64 `json:"gangBindP50s"`
	// HeapMiB is the scheduler process's live heap after a forced
	// collection at the window's end, from its /debug/pprof/heap (0 in
	// external mode without -perf.external-metrics).
	HeapMiB float64 `json:"heapMiB"`
}

// Decay compares a churn run's last window with its first steady one.
type Decay struct {
	// FirstSteady is the index of the first steady window.
	FirstSteady int `json:"firstSteady"`
	// Throughput is the last window's bound pods/s over the first steady
	// window's (1: no decay).
	Throughput float64 `json:"throughput"`
	// KeptUp is the pods bound over those created, from the first steady
	// window to the last: below 1 a backlog grows, and the throughput ratio
	// then measures how fast the scheduler drains it, not a steady state.
	KeptUp float64 `json:"keptUp"`
	// HeapWarmMiB is the live heap after the warm-up (at the end of the
	// window before the first steady one), HeapEndMiB at the last window's
	// end, Heap their ratio (1: flat).
	HeapWarmMiB float64 `json:"heapWarmMiB"`
	HeapEndMiB  float64 `json:"heapEndMiB"`
	Heap        float64 `json:"heap"`
	// HeapStartMiB is the scheduler's live heap at the first arrival (the
	// scheduler started, no workload pod yet), HeapDrainedMiB after the run
	// once every gang was finished and deleted (0 if they were not): their
	// difference is what the churn left behind in the scheduler.
	HeapStartMiB   float64 `json:"heapStartMiB"`
	HeapDrainedMiB float64 `json:"heapDrainedMiB"`
	// HeapGrowthMiB is the live heap's growth over the same span (from
	// HeapWarmMiB's sample to HeapEndMiB's) by a least-squares line through
	// every sample of it: one sample catches whatever is in flight then
	// (the whole process's swung by 10-30 MiB), so two end points alone
	// tell little.
	HeapGrowthMiB float64 `json:"heapGrowthMiB"`
	// SteadyCreated is the pods that arrived from the first steady window
	// to the last: the churn that the heap's growth is measured over.
	SteadyCreated int `json:"steadyCreated"`
}

// Churn targets (docs/performance.md): the last window binds at least this
// share of the first steady window's rate, the steady windows bind at least
// this share of the pods that arrive in them, and the scheduler's live heap
// grows, over the default profile's scheduler's (its informers and queue
// under the same pods), by at most this many bytes per pod that arrived:
// less than the cache's budget for a pod it holds, so a cache that kept
// finished pods would miss.
const (
	minChurnThroughput    = 0.9
	minChurnKeptUp        = 0.9
	maxChurnGrowthPerPodB = 1024
)

// churnWindows counts, per window of n from start, the pods created (by
// their gang's creation start), bound and finished, and the median
// creation-to-bind time of the gangs completed in it. Events outside the n
// windows (binds after arrivals stopped) are not counted.
func churnWindows(start time.Time, window time.Duration, n int, binds, finishes, groupStart, groupDone []time.Time, groupSize int) []Window {
	ws := make([]Window, n)
	index := func(at time.Time) int {
		if at.IsZero() || at.Before(start) {
			return -1
		}
		if i := int(at.Sub(start) / window); i < n {
			return i
		}
		return -1
	}
	for i := range ws {
		ws[i].StartSeconds = (time.Duration(i) * window).Seconds()
	}
	for _, at := range binds {
		if i := index(at); i >= 0 {
			ws[i].Bound++
		}
	}
	for _, at := range finishes {
		if i := index(at); i >= 0 {
			ws[i].Finished += groupSize
		}
	}
	latencies := make([][]float64, n)
	for g, at := range groupStart {
		if i := index(at); i >= 0 {
			ws[i].Created += groupSize
		}
		if g < len(groupDone) && !at.IsZero() {
			if i := index(groupDone[g]); i >= 0 {
				latencies[i] = append(latencies[i], groupDone[g].Sub(at).Seconds())
			}
		}
	}
	for i := range ws {
		ws[i].BoundPerSec = float64(ws[i].Bound) / window.Seconds()
		ws[i].GangBindP50 = percentile(latencies[i], 50)
	}
	return ws
}

// decayOf compares the last window with window firstSteady; ok is false
// when there is no later window to compare or no steady throughput.
func decayOf(ws []Window, firstSteady int) (Decay, bool) {
	last := len(ws) - 1
	if firstSteady < 1 || firstSteady >= last || ws[firstSteady].BoundPerSec == 0 {
		return Decay{}, false
	}
	d := Decay{
		FirstSteady: firstSteady,
		Throughput:  ws[last].BoundPerSec / ws[firstSteady].BoundPerSec,
		HeapWarmMiB: ws[firstSteady-1].HeapMiB,
		HeapEndMiB:  ws[last].HeapMiB,
	}
	if d.HeapWarmMiB > 0 {
		d.Heap = d.HeapEndMiB / d.HeapWarmMiB
		heap := make([]float64, 0, len(ws)-firstSteady+1)
		for _, w := range ws[firstSteady-1:] {
			heap = append(heap, w.HeapMiB)
		}
		d.HeapGrowthMiB = slope(heap) * float64(len(heap)-1)
	}
	created, bound := 0, 0
	for _, w := range ws[firstSteady:] {
		created += w.Created
		bound += w.Bound
	}
	if created > 0 {
		d.KeptUp = float64(bound) / float64(created)
	}
	d.SteadyCreated = created
	return d, true
}

// slope is the least-squares slope of ys against their index.
func slope(ys []float64) float64 {
	n := float64(len(ys))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i, y := range ys {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// runChurn measures a churn workload (W6) under profile p on a fresh
// control plane: the scheduler starts first (a probe pod proves it sees
// every node), then gangs arrive for Churn.Duration and finish as they
// complete; the run ends when every gang that arrived is bound.
func runChurn(t *testing.T, w Workload, p Profile, opts Options) Result {
	c := *w.Churn
	res := Result{
		Workload: w.Name, Profile: p.Name, Nodes: w.Nodes, Pods: w.Pods(),
		Groups: w.Groups, GroupSize: w.GroupSize,
	}
	fail := func(err error) Result {
		res.Error = err.Error()
		t.Logf("%s/%s: %v", w.Name, p.Name, err)
		return res
	}
	envOpts := append([]harness.EnvOption{harness.WithClientQPS(schedulerQPS, schedulerQPS)}, p.envOptions...)
	env := harness.StartWith(t, envOpts...)
	ctx := t.Context()
	if err := createNodes(ctx, env, w); err != nil {
		return fail(err)
	}
	const ns = "perf"
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fail(err)
	}
	watcher := newBindWatcher(env.Client, ns, w.Groups, w.GroupSize)
	watcher.bindTimes = make([]time.Time, 0, w.Pods())
	watcher.groupsDone = make(chan groupBound, w.Groups)
	if err := watcher.start(ctx); err != nil {
		return fail(err)
	}

	match := map[string]string{"profile": p.SchedulerName}
	stopProfile := sync.OnceFunc(startCPUProfile(t, opts.ProfileDir, w.Name+"-"+p.Name))
	defer stopProfile()
	// W6's scheduler always has a process of its own (startScheduler): its
	// live heap is read from its /debug/pprof/heap, which an external
	// scheduler serves only with -perf.external-metrics (readHeap nil: no
	// heap figures).
	proc, err := startScheduler(t, env, w, p, opts)
	if err != nil {
		return fail(err)
	}
	if proc == nil {
		return fail(fmt.Errorf("%s runs its scheduler in a process of its own", w.Name))
	}
	mem := &memSampler{pid: proc.pid}
	scrape := metricsSource(proc.scrape)
	var readHeap heapReader
	if proc.endpoints != nil {
		readHeap = proc.endpoints.liveHeap
	}
	if err := probe(ctx, env, p, w.Nodes-1); err != nil {
		return fail(err)
	}
	before, _ := scrape(ctx, match)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var background sync.WaitGroup
	background.Go(func() { mem.run(runCtx, memInterval) })

	var heapStart float64
	if readHeap != nil {
		b, _ := liveHeap(ctx, readHeap, 1, 0)
		heapStart = mib(b)
	}
	cpuBefore, procBefore := cpuSeconds(0), readProcStat(proc.pid)
	start := time.Now()
	n := c.windows()
	heap := make([]float64, n)
	heapDone := make(chan struct{})
	if readHeap != nil {
		background.Go(func() {
			defer close(heapDone)
			sampleHeapAtWindowEnds(runCtx, readHeap, start, c.Window, heap)
		})
	} else {
		close(heapDone)
	}
	fin := &finisher{env: env, ns: ns, w: w, p: p, c: c}
	background.Go(func() { fin.run(runCtx, watcher.groupsDone) })
	background.Go(func() { watcher.sample(runCtx, sampleInterval) })

	// Arrivals: each gang on its own goroutine at its time, so a slow
	// create does not delay the next arrival and the rate holds.
	groupStart := make([]time.Time, w.Groups)
	var creates sync.WaitGroup
	createErr := make(chan error, 1)
	for g := range w.Groups {
		if !sleepUntil(ctx, start.Add(time.Duration(float64(g)/c.GangsPerSec*float64(time.Second)))) {
			break
		}
		groupStart[g] = time.Now()
		creates.Go(func() {
			if err := createGang(ctx, env, w, p, ns, g); err != nil {
				select {
				case createErr <- err:
				default:
				}
			}
		})
	}
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	select {
	case <-watcher.done:
	case err := <-createErr:
		res.Error = err.Error()
	case <-timer.C:
		res.Error = fmt.Sprintf("timed out %v after the last arrival: %d/%d pods bound", opts.Timeout, watcher.boundCount(), w.Pods())
	}
	res.setCPU(proc, opts.External != nil, cpuBefore, procBefore)
	stopProfile()
	var heapDrained float64
	if res.Error == "" && readHeap != nil {
		heapDrained = drain(ctx, readHeap, heapDone, fin, w.Groups, c)
		saveLiveHeapProfile(ctx, t, proc, opts.ProfileDir, w.Name+"-"+p.Name)
	}
	stopRun()
	creates.Wait()
	background.Wait()
	if err := fin.err(); err != nil && res.Error == "" {
		res.Error = err.Error()
	}

	watcher.mu.Lock()
	res.Bound = len(watcher.bound)
	if !watcher.firstBind.IsZero() {
		res.FirstBindSeconds = watcher.firstBind.Sub(start).Seconds()
	}
	last := watcher.lastBind
	samples := throughputSamples(watcher.samples, sampleInterval)
	res.Windows = churnWindows(start, c.Window, n, watcher.bindTimes, fin.finishTimes(), groupStart, watcher.groupDone, w.GroupSize)
	var gangTimes []float64
	for g, done := range watcher.groupDone {
		if !done.IsZero() && !groupStart[g].IsZero() {
			gangTimes = append(gangTimes, done.Sub(groupStart[g]).Seconds())
		}
	}
	watcher.mu.Unlock()
	for i := range res.Windows {
		res.Windows[i].HeapMiB = heap[i]
	}
	if d, ok := decayOf(res.Windows, c.firstSteady()); ok {
		d.HeapStartMiB, d.HeapDrainedMiB = heapStart, heapDrained
		res.Decay = &d
	}
	if res.Bound > 0 {
		res.Seconds = last.Sub(start).Seconds()
		res.PodsPerSecAvg = float64(res.Bound) / res.Seconds
		res.PodsPerSecP50 = percentile(samples, 50)
	}
	res.GangBindP50, res.GangBindP99, res.GangBindMax = percentile(gangTimes, 50), percentile(gangTimes, 99), percentile(gangTimes, 100)
	res.PeakHeapMiB = mib(mem.peakHeap)
	res.PeakRSSMiB = mib(mem.peakRSS)
	if after, err := scrape(context.WithoutCancel(ctx), match); err == nil {
		h := after.sub(before)
		res.Attempts = int(h.total())
		res.AttemptP50Ms = h.quantile(0.50) * 1000
		res.AttemptP99Ms = h.quantile(0.99) * 1000
	}
	t.Logf("%s/%s: %d/%d pods bound, %d gangs finished; per %v window: %s %s",
		w.Name, p.Name, res.Bound, res.Pods, len(fin.finishTimes()), c.Window, windowSummary(res.Windows), res.Error)
	return res
}

// sleepUntil waits until at; false if ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// drain waits for the last window's heap sample, then for every one of
// gangs to be finished and deleted, and returns the least of three live
// heap samples of read then (MiB; 0 if the gangs were not all deleted in
// time).
func drain(ctx context.Context, read heapReader, heapDone <-chan struct{}, fin *finisher, gangs int, c Churn) float64 {
	select {
	case <-heapDone:
	case <-ctx.Done():
		return 0
	}
	deadline := time.Now().Add(c.RunTime + c.Linger + time.Minute)
	for fin.deletedCount() < gangs {
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
			return 0
		}
	}
	// Informers deliver the deletes, and Caldera writes its last statuses.
	if !sleepUntil(ctx, time.Now().Add(drainSettle)) {
		return 0
	}
	b, _ := liveHeap(ctx, read, 3, 2*time.Second)
	return mib(b)
}

// drainSettle is the wait between the last deletion and the drained heap.
const drainSettle = 5 * time.Second

// sampleHeapAtWindowEnds fills heap[i] with one live-heap sample of read
// (MiB) at the end of window i, until ctx ends.
func sampleHeapAtWindowEnds(ctx context.Context, read heapReader, start time.Time, window time.Duration, heap []float64) {
	for i := range heap {
		if !sleepUntil(ctx, start.Add(time.Duration(i+1)*window)) {
			return
		}
		b, _ := liveHeap(ctx, read, 1, 0)
		heap[i] = mib(b)
	}
}

// createGang creates gang g: its group object (on profiles with gang
// semantics), then its pods.
func createGang(ctx context.Context, env *harness.Env, w Workload, p Profile, ns string, g int) error {
	if err := createGroup(ctx, env, w, p, ns, g); err != nil {
		return err
	}
	for m := range w.GroupSize {
		pod := w.pod(ns, p, g, m)
		if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// finisher ends each bound gang as a kubelet and a Job controller would: its
// pods Succeeded RunTime after the last bind, then deleted with the group
// Linger later.
type finisher struct {
	env *harness.Env
	ns  string
	w   Workload
	p   Profile
	c   Churn

	mu       sync.Mutex
	finished []time.Time
	deleted  int
	firstErr error
}

// succeeded is the status patch a kubelet sends when every container exited 0.
var succeeded = []byte(`{"status":{"phase":"Succeeded"}}`)

// run finishes the gangs received on bound until ctx ends (what is in
// flight then is abandoned: the control plane goes away with the run).
func (f *finisher) run(ctx context.Context, bound <-chan groupBound) {
	var gangs sync.WaitGroup
	defer gangs.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-bound:
			gangs.Go(func() { f.finish(ctx, b) })
		}
	}
}

func (f *finisher) finish(ctx context.Context, b groupBound) {
	done := b.at.Add(f.c.RunTime)
	if !sleepUntil(ctx, done) {
		return
	}
	pods := f.env.Client.CoreV1().Pods(f.ns)
	for m := range f.w.GroupSize {
		name := fmt.Sprintf("p-%d-%d", b.group, m)
		if _, err := pods.Patch(ctx, name, types.MergePatchType, succeeded, metav1.PatchOptions{}, "status"); err != nil {
			f.fail(ctx, fmt.Errorf("marking %s Succeeded: %w", name, err))
			return
		}
	}
	f.mu.Lock()
	f.finished = append(f.finished, time.Now())
	f.mu.Unlock()
	if !sleepUntil(ctx, done.Add(f.c.Linger)) {
		return
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	sel := metav1.ListOptions{LabelSelector: groupLabel + "=" + strconv.Itoa(b.group)}
	if err := pods.DeleteCollection(ctx, now, sel); err != nil {
		f.fail(ctx, fmt.Errorf("deleting gang %d: %w", b.group, err))
		return
	}
	var err error
	switch f.p.Gang {
	case GangCaldera:
		err = f.env.PGClient.SchedulingV1alpha1().PodGroups(f.ns).Delete(ctx, groupName(b.group), metav1.DeleteOptions{})
	case GangUpstream:
		err = f.env.Client.SchedulingV1beta1().PodGroups(f.ns).Delete(ctx, groupName(b.group), metav1.DeleteOptions{})
	}
	if err != nil {
		f.fail(ctx, fmt.Errorf("deleting group %s: %w", groupName(b.group), err))
		return
	}
	f.mu.Lock()
	f.deleted++
	f.mu.Unlock()
}

// deletedCount is the number of gangs deleted so far.
func (f *finisher) deletedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deleted
}

// fail keeps the first error, unless the run is over (then calls in flight
// fail for that reason only).
func (f *finisher) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.firstErr == nil {
		f.firstErr = err
	}
}

func (f *finisher) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.firstErr
}

// finishTimes is when each finished gang's pods were all Succeeded.
func (f *finisher) finishTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.finished...)
}

// windowSummary is the windows' bound pods/s and heap, for the log.
func windowSummary(ws []Window) string {
	s := ""
	for _, x := range ws {
		s += fmt.Sprintf("[%.0fs %.1f/s %.0fMiB] ", x.StartSeconds, x.BoundPerSec, x.HeapMiB)
	}
	return s
}
