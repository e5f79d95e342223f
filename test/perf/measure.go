package perf

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// groupLabel numbers a pod's group (0-based) for the measurements, whatever
// gang semantics the profile gives the group.
const groupLabel = "perf.caldera.dev/group"

// bindWatcher records, from a watch on the workload's namespace, when each
// pod was first seen bound.
type bindWatcher struct {
	mu        sync.Mutex
	bound     map[string]struct{}
	perGroup  []int       // bound members per group
	groupDone []time.Time // when the group's last member was bound
	groupSize int
	total     int
	firstBind time.Time
	lastBind  time.Time
	samples   []int // bound count at each sampling tick
	// bindTimes, when non-nil, collects every bind's time (churn windows).
	bindTimes []time.Time
	// groupsDone, when non-nil, receives each group once its last member
	// is bound (churn finishes gangs from it); it must have room for every
	// group, since observe sends under the lock.
	groupsDone chan groupBound
	done       chan struct{}
	informer   cache.SharedIndexInformer
}

// groupBound says that group's last member was seen bound at a time.
type groupBound struct {
	group int
	at    time.Time
}

// newBindWatcher watches the pods of ns; total pods in groups of groupSize.
func newBindWatcher(client kubernetes.Interface, ns string, groups, groupSize int) *bindWatcher {
	w := &bindWatcher{
		bound:     make(map[string]struct{}, groups*groupSize),
		perGroup:  make([]int, groups),
		groupDone: make([]time.Time, groups),
		groupSize: groupSize,
		total:     groups * groupSize,
		done:      make(chan struct{}),
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
	w.informer = cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
	// Keep only what the watcher reads: the harness's own heap is part of
	// the in-process peak and should stay small.
	_ = w.informer.SetTransform(func(obj any) (any, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return obj, nil
		}
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: map[string]string{groupLabel: pod.Labels[groupLabel]}, ResourceVersion: pod.ResourceVersion},
			Spec:       v1.PodSpec{NodeName: pod.Spec.NodeName},
		}, nil
	})
	_, _ = w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	})
	return w
}

// start runs the informer and waits for its first list.
func (w *bindWatcher) start(ctx context.Context) error {
	go w.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
		return fmt.Errorf("pod watch did not sync")
	}
	return nil
}

func (w *bindWatcher) observe(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.bound[pod.Name]; seen {
		return
	}
	w.bound[pod.Name] = struct{}{}
	if w.firstBind.IsZero() {
		w.firstBind = now
	}
	w.lastBind = now
	if w.bindTimes != nil {
		w.bindTimes = append(w.bindTimes, now)
	}
	if g, err := strconv.Atoi(pod.Labels[groupLabel]); err == nil && g >= 0 && g < len(w.perGroup) {
		w.perGroup[g]++
		if w.perGroup[g] == w.groupSize {
			w.groupDone[g] = now
			if w.groupsDone != nil {
				w.groupsDone <- groupBound{group: g, at: now}
			}
		}
	}
	if len(w.bound) == w.total {
		close(w.done)
	}
}

// sample records the bound count every interval until the watcher is done
// or ctx ends.
func (w *bindWatcher) sample(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.done:
			return
		case <-ticker.C:
			w.mu.Lock()
			w.samples = append(w.samples, len(w.bound))
			w.mu.Unlock()
		}
	}
}

// boundCount is the number of pods seen bound so far.
func (w *bindWatcher) boundCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bound)
}

// throughputSamples turns cumulative counts taken every interval into
// pods/s per interval. Only whole intervals count: the last partial one is
// dropped.
func throughputSamples(cumulative []int, interval time.Duration) []float64 {
	out := make([]float64, 0, len(cumulative))
	prev := 0
	for _, c := range cumulative {
		out = append(out, float64(c-prev)/interval.Seconds())
		prev = c
	}
	return out
}

// percentile returns the p-th percentile (0..100, nearest rank) of xs, or 0.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// memSampler keeps the peak Go heap of this process and the peak RSS of a
// process (this one, or an external scheduler).
type memSampler struct {
	pid      int // 0: this process
	peakHeap uint64
	peakRSS  uint64
}

// run samples every interval until ctx ends.
func (m *memSampler) run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for {
		if m.pid == 0 {
			metrics.Read(sample)
			if v := sample[0].Value; v.Kind() == metrics.KindUint64 {
				m.peakHeap = max(m.peakHeap, v.Uint64())
			}
		}
		if rss, err := readRSS(m.pid); err == nil {
			m.peakRSS = max(m.peakRSS, rss)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// heapReader takes one live-heap sample: a forced collection, then the
// bytes of live heap objects (HeapAlloc) of some process.
type heapReader func(ctx context.Context) (uint64, error)

// liveHeap returns the smallest of n samples of read, gap apart, and every
// sample (MiB, for the log); 0 when none could be read. Only the smallest:
// what is in flight at a sample (a watch event being decoded, a burst of
// status writes) only adds.
func liveHeap(ctx context.Context, read heapReader, n int, gap time.Duration) (uint64, []string) {
	least, trace, _ := liveHeapUntil(ctx, read, gap, func(samples []uint64) bool { return len(samples) >= n })
	return least, trace
}

// liveHeapStable samples read like liveHeap, gap apart, until the last
// three of at least atLeast samples are within 1% of each other or maxWait
// passed: after Caldera's start at 50,000 pods the live heap still fell by
// a third over the first 10 s of samples. It fails only when no sample
// could be read.
func liveHeapStable(ctx context.Context, read heapReader, atLeast int, gap, maxWait time.Duration) (uint64, []string, error) {
	deadline := time.Now().Add(maxWait)
	return liveHeapUntil(ctx, read, gap, func(samples []uint64) bool {
		return time.Now().After(deadline) || len(samples) >= atLeast && stable(samples[len(samples)-3:], 0.01)
	})
}

// stable reports whether xs are within tolerance (a fraction) of their least.
func stable(xs []uint64, tolerance float64) bool {
	least, most := slices.Min(xs), slices.Max(xs)
	return float64(most-least) <= tolerance*float64(least)
}

func liveHeapUntil(ctx context.Context, read heapReader, gap time.Duration, done func([]uint64) bool) (uint64, []string, error) {
	var samples []uint64
	var trace []string
	var err error
	for {
		if len(samples) > 0 && !sleepUntil(ctx, time.Now().Add(gap)) {
			break
		}
		var b uint64
		if b, err = read(ctx); err != nil {
			trace = append(trace, "("+err.Error()+")")
			break
		}
		samples = append(samples, b)
		trace = append(trace, fmt.Sprintf("%.0f", mib(b)))
		if done(samples) {
			break
		}
	}
	if len(samples) == 0 {
		if err == nil {
			err = ctx.Err()
		}
		return 0, trace, err
	}
	return slices.Min(samples), trace, nil
}

// mib converts bytes to MiB.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// readRSS reads VmRSS of pid (0: self) from /proc, in bytes.
func readRSS(pid int) (uint64, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in %s", path)
}

// histogram is a Prometheus histogram: cumulative counts by upper bound.
type histogram struct {
	bounds []float64 // ascending, +Inf last
	counts []float64 // cumulative
}

// histogramOf sums the buckets of the histogram name over every series of
// gathered families whose labels include match.
func histogramOf(families []*dto.MetricFamily, name string, match map[string]string) histogram {
	byBound := map[float64]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if !matches(labels, match) || m.GetHistogram() == nil {
				continue
			}
			for _, b := range m.GetHistogram().GetBucket() {
				byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
			byBound[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return histogramFrom(byBound)
}

// parseHistogram sums, from Prometheus text exposition, the buckets of the
// histogram name over every series whose labels include match.
func parseHistogram(text []byte, name string, match map[string]string) histogram {
	byBound := map[float64]float64{}
	prefix := name + "_bucket{"
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		end := strings.LastIndex(rest, "}")
		if end < 0 {
			continue
		}
		labels := parseLabels(rest[:end])
		if !matches(labels, match) {
			continue
		}
		bound, err := strconv.ParseFloat(labels["le"], 64)
		if err != nil {
			continue
		}
		fields := strings.Fields(rest[end+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		byBound[bound] += v
	}
	return histogramFrom(byBound)
}

// histogramFrom orders cumulative counts by bound.
func histogramFrom(byBound map[float64]float64) histogram {
	var h histogram
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	slices.Sort(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// parseLabels parses `a="x",b="y"` (with Prometheus escapes in values).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for len(s) > 0 {
		eq := strings.Index(s, "=\"")
		if eq < 0 {
			break
		}
		key := strings.TrimLeft(s[:eq], ", ")
		s = s[eq+2:]
		var val strings.Builder
		i := 0
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(s[i])
		}
		out[key] = val.String()
		if i >= len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// sub returns h - before, bucket by bucket (the counters only grow, so this
// is the histogram of what happened in between).
func (h histogram) sub(before histogram) histogram {
	prev := map[float64]float64{}
	for i, b := range before.bounds {
		prev[b] = before.counts[i]
	}
	out := histogram{bounds: slices.Clone(h.bounds), counts: make([]float64, len(h.counts))}
	for i, b := range h.bounds {
		out.counts[i] = h.counts[i] - prev[b]
	}
	return out
}

// total is the number of observations.
func (h histogram) total() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantile estimates the q-quantile (0..1) by linear interpolation inside
// the bucket holding it, as PromQL's histogram_quantile does. An answer in
// the +Inf bucket is the largest finite bound.
func (h histogram) quantile(q float64) float64 {
	n := h.total()
	if n == 0 {
		return 0
	}
	rank := q * n
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			inBucket := h.counts[i] - below
			if inBucket <= 0 {
				return b
			}
			return lower + (b-lower)*(rank-below)/inBucket
		}
		lower, below = b, h.counts[i]
	}
	return lower
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// cpuSeconds is the user+system CPU time of pid (0: this process) so far, or
// 0 when it cannot be read.
func cpuSeconds(pid int) float64 { return readProcStat(pid).cpu }

// procStat is what /proc/<pid>/stat says of a process's work so far.
type procStat struct {
	// cpu is user+system CPU seconds; sys the system (kernel) part.
	cpu, sys float64
	// faults counts minor page faults: first touches of fresh memory. On
	// a virtual machine each costs the kernel tens of microseconds, so a
	// start that grows a larger heap pays for it in sys, not in the
	// process's own code, where a CPU profile cannot show it.
	faults uint64
}

// sub is s less before. A reading that failed (zero) after one that did
// not gives no faults rather than a count wrapped past zero.
func (s procStat) sub(before procStat) procStat {
	d := procStat{cpu: s.cpu - before.cpu, sys: s.sys - before.sys}
	if s.faults > before.faults {
		d.faults = s.faults - before.faults
	}
	return d
}

// readProcStat reads pid's procStat (0: this process); zero when it cannot
// be read.
func readProcStat(pid int) procStat {
	path := "/proc/self/stat"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return procStat{}
	}
	// Fields after the command name (which may hold spaces) start at state.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return procStat{}
	}
	minflt, err0 := strconv.ParseUint(f[7], 10, 64)
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return procStat{}
	}
	return procStat{cpu: float64(utime+stime) / clockTicks, sys: float64(stime) / clockTicks, faults: minflt}
}
