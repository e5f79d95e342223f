package perf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Result is one workload under one profile.
type Result struct {
	Workload  string `json:"workload"`
	Profile   string `json:"profile"`
	Run       int    `json:"run"`
	Nodes     int    `json:"nodes"`
	Pods      int    `json:"pods"`
	Groups    int    `json:"groups"`
	Prebound  int    `json:"prebound,omitempty"`
	GroupSize int    `json:"groupSize"`
	// Bound pods seen by the watch.
	Bound int `json:"bound"`
	// Seconds from the first pod's create to the last bind.
	Seconds float64 `json:"seconds"`
	// CreateSeconds: when the last create returned; FirstBindSeconds: when
	// the first pod was seen bound (both from the first create).
	CreateSeconds    float64 `json:"createSeconds"`
	FirstBindSeconds float64 `json:"firstBindSeconds"`
	// CPUSeconds is the CPU time used meanwhile: in-process, by the whole
	// process (apiserver, etcd, scheduler, harness), plus the scheduler
	// process's when it has its own (W5, W6); external, by the scheduler.
	// On a shared machine it varies less than wall time.
	CPUSeconds float64 `json:"cpuSeconds"`
	// SchedulerCPUSeconds is the scheduler's share of CPUSeconds: in-process,
	// the goroutines labelled component=scheduler in the -perf.pprof profile
	// (0 without profiles); with a process of its own, that process's
	// (/proc/<pid>/stat): W5 all of it, start-up included, W6 from the first
	// arrival to the last bind.
	SchedulerCPUSeconds float64 `json:"schedulerCpuSeconds"`
	// SchedulerSysSeconds is the kernel's part of a scheduler process's
	// CPU, and SchedulerFaults that process's minor page faults (both from
	// /proc/<pid>/stat, 0 in-process): W5 at 150,000 pods showed a third
	// of the scheduler's CPU in the kernel, about 25 us per fault on this
	// machine, which grows with the heap a start fills.
	SchedulerSysSeconds float64 `json:"schedulerSysSeconds,omitempty"`
	SchedulerFaults     uint64  `json:"schedulerFaults,omitempty"`
	// PodsPerSecAvg is Bound / Seconds; PodsPerSecP50 the median of the
	// 1-second samples.
	PodsPerSecAvg float64 `json:"podsPerSecAvg"`
	PodsPerSecP50 float64 `json:"podsPerSecP50"`
	// Attempts and their latency, from scheduler_scheduling_attempt_duration_seconds
	// (all results) for this run's profile.
	Attempts     int     `json:"attempts"`
	AttemptP50Ms float64 `json:"attemptP50Ms"`
	AttemptP99Ms float64 `json:"attemptP99Ms"`
	// Gang bind times, seconds from a group's first pod create to its last
	// member's bind (groups of more than one pod only).
	GangBindP50 float64 `json:"gangBindP50s"`
	GangBindP99 float64 `json:"gangBindP99s"`
	GangBindMax float64 `json:"gangBindMaxs"`
	// Peak memory during the run: in-process, the whole test process (etcd,
	// apiserver, scheduler, harness); when the scheduler has a process of
	// its own (W5, W6, external), its RSS only (and no heap).
	PeakHeapMiB float64 `json:"peakHeapMiB"`
	PeakRSSMiB  float64 `json:"peakRSSMiB"`
	// LiveHeapMiB (workloads with LiveHeap, M1): the live heap of the
	// scheduler's process after a forced GC, after the run: what the
	// scheduler holds (the process is new, so it holds nothing else).
	LiveHeapMiB float64 `json:"liveHeapMiB,omitempty"`
	// Windows and Decay (churn workloads, W6): per-interval throughput and
	// the scheduler process's live heap, and the last window against the
	// first steady one.
	Windows []Window `json:"windows,omitempty"`
	Decay   *Decay   `json:"decay,omitempty"`
	// Evictions (W7): low-priority pods deleted during the run.
	Evictions int `json:"evictions,omitempty"`
	// Timings are the in-process scheduler's latency histograms over the
	// run, by extension point and plugin (timingSet); W7 and W8 report them.
	Timings map[string]Timing `json:"timings,omitempty"`
	// Error says why the run did not finish, if it did not.
	Error string `json:"error,omitempty"`
}

// Ratio compares two profiles of the same run against a target.
type Ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	// Holds is nil for ratios reported without a target.
	Holds *bool `json:"holds,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel"`
	MemTotal  string `json:"memTotal"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"goVersion"`
	LoadAvg   string `json:"loadAvgAtStart"`
}

// Report is the whole run.
type Report struct {
	Size    string    `json:"size"`
	Started time.Time `json:"started"`
	Machine Machine   `json:"machine"`
	Results []Result  `json:"results"`
	Ratios  []Ratio   `json:"ratios"`
}

// DescribeMachine reads the machine's description from /proc.
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// median returns the median of f over the finished results of (workload,
// profile), and whether there was any.
func (r *Report) median(workload, profile string, f func(Result) float64) (float64, bool) {
	var xs []float64
	for _, res := range r.Results {
		if res.Workload == workload && res.Profile == profile && res.Error == "" && res.Bound > 0 {
			xs = append(xs, f(res))
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	return xs[len(xs)/2], true
}

// ComputeRatios fills r.Ratios with the targets, from the medians of
// each (workload, profile) over the runs.
func (r *Report) ComputeRatios() {
	podsPerSec := func(res Result) float64 { return res.PodsPerSecAvg }
	seconds := func(res Result) float64 { return res.Seconds }
	gangP50 := func(res Result) float64 { return res.GangBindP50 }
	schedCPU := func(res Result) float64 { return res.SchedulerCPUSeconds }
	type spec struct {
		name           string
		wNum, pNum     string
		wDen, pDen     string
		f              func(Result) float64
		target         string
		atLeast, limit float64 // holds if value >= atLeast (or <= limit when atLeast is 0)
	}
	specs := []spec{
		{"W1 pods/s caldera / default", "W1", ProfileCaldera, "W1", ProfileDefault, podsPerSec, ">= 0.95", 0.95, 0},
		{"W2 pods/s caldera / default (no gang semantics)", "W2", ProfileCaldera, "W2", ProfileDefault, podsPerSec, ">= 0.9", 0.9, 0},
		{"W2 pods/s caldera / upstream-gang", "W2", ProfileCaldera, "W2", ProfileUpstream, podsPerSec, ">= 1.0", 1.0, 0},
		{"W2 gang bind p50 caldera / upstream-gang", "W2", ProfileCaldera, "W2", ProfileUpstream, gangP50, "", 0, 0},
		{"W3 one-gang time caldera / as many plain pods default", "W3-gang", ProfileCaldera, "W3-plain", ProfileDefault, seconds, "<= 1.2", 0, 1.2},
		{"W3 gang time caldera / plain pods caldera", "W3-gang", ProfileCaldera, "W3-plain", ProfileCaldera, seconds, "", 0, 0},
		{"W3 gang time caldera / upstream-gang", "W3-gang", ProfileCaldera, "W3-gang", ProfileUpstream, seconds, "", 0, 0},
		{"W5 first bind after start caldera / default", "W5", ProfileCaldera, "W5", ProfileDefault, seconds, "", 0, 0},
		// CalderaGangPlacement may cost at most 5% of gang throughput.
		{"W2 pods/s caldera / caldera without CalderaGangPlacement", "W2", ProfileCaldera, "W2", ProfileCalderaNoPlacement, podsPerSec, ">= 0.95", 0.95, 0},
		// Informational: the share of the gap to default that is upstream's
		// nominatedNodeName write per Permit-waiting member.
		{"W2 pods/s caldera without nominatedNodeName writes / default", "W2", ProfileCalderaNoNomination, "W2", ProfileDefault, podsPerSec, "", 0, 0},
		{"W3 one-gang time caldera without nominatedNodeName writes / as many plain pods default", "W3-gang", ProfileCalderaNoNomination, "W3-plain", ProfileDefault, seconds, "", 0, 0},
	}
	// Scheduler CPU (lower is better), informational: [workload, numerator, denominator].
	for _, c := range [][3]string{
		{"W1", ProfileCaldera, ProfileDefault},
		{"W1", ProfileCalderaGangsOnly, ProfileDefault},
		{"W2", ProfileCaldera, ProfileDefault},
		{"W2", ProfileCaldera, ProfileUpstream},
		{"W2", ProfileCaldera, ProfileCalderaNoPlacement},
		{"W3-gang", ProfileCaldera, ProfileUpstream},
	} {
		specs = append(specs, spec{name: fmt.Sprintf("%s scheduler CPU %s / %s", c[0], c[1], c[2]),
			wNum: c[0], pNum: c[1], wDen: c[0], pDen: c[2], f: schedCPU})
	}
	r.Ratios = nil
	for _, s := range specs {
		num, ok1 := r.median(s.wNum, s.pNum, s.f)
		den, ok2 := r.median(s.wDen, s.pDen, s.f)
		if !ok1 || !ok2 || den == 0 || num == 0 {
			continue
		}
		ratio := Ratio{Name: s.name, Value: num / den, Target: s.target}
		switch {
		case s.atLeast > 0:
			ratio.Holds = new(ratio.Value >= s.atLeast)
		case s.limit > 0:
			ratio.Holds = new(ratio.Value <= s.limit)
		}
		r.Ratios = append(r.Ratios, ratio)
	}
	r.Ratios = append(r.Ratios, r.heapPerPod()...)
	r.Ratios = append(r.Ratios, r.churnDecay()...)
	r.Ratios = append(r.Ratios, r.scaleRatios()...)
}

// churnDecay is W6's targets per (churn workload, profile), from the
// medians over runs: throughput of the last window against the first
// steady one, and the scheduler's live heap at the end against after the
// warm-up.
func (r *Report) churnDecay() []Ratio {
	type key struct{ workload, profile string }
	var keys []key
	seen := map[key]bool{}
	for _, res := range r.Results {
		k := key{res.Workload, res.Profile}
		if res.Decay != nil && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	var out []Ratio
	for _, k := range keys {
		decayed := func(f func(Decay) float64) func(Result) float64 {
			return func(res Result) float64 {
				if res.Decay == nil {
					return 0
				}
				return f(*res.Decay)
			}
		}
		if v, ok := r.median(k.workload, k.profile, decayed(func(d Decay) float64 { return d.Throughput })); ok && v > 0 {
			out = append(out, Ratio{
				Name:  fmt.Sprintf("%s bound pods/s last window / first steady window, %s", k.workload, k.profile),
				Value: v, Target: fmt.Sprintf(">= %.1f", minChurnThroughput), Holds: new(v >= minChurnThroughput),
			})
		}
		if v, ok := r.median(k.workload, k.profile, decayed(func(d Decay) float64 { return d.KeptUp })); ok && v > 0 {
			out = append(out, Ratio{
				Name:  fmt.Sprintf("%s pods bound / created in the steady windows, %s", k.workload, k.profile),
				Value: v, Target: fmt.Sprintf(">= %.1f", minChurnKeptUp), Holds: new(v >= minChurnKeptUp),
			})
		}
		if v, ok := r.median(k.workload, k.profile, decayed(func(d Decay) float64 { return d.Heap })); ok && v > 0 {
			// Two samples of one window each: informational; the fitted
			// growth per pod below, over default's, carries the target.
			out = append(out, Ratio{Name: fmt.Sprintf("%s scheduler live heap at end / after warm-up, %s", k.workload, k.profile), Value: v})
		}
		if k.profile == ProfileDefault {
			continue
		}
		growth := decayed(func(d Decay) float64 { return d.HeapGrowthMiB })
		g, ok1 := r.median(k.workload, k.profile, growth)
		base, ok2 := r.median(k.workload, ProfileDefault, growth)
		pods, ok3 := r.median(k.workload, k.profile, decayed(func(d Decay) float64 { return float64(d.SteadyCreated) }))
		if ok1 && ok2 && ok3 && pods > 0 && seen[key{k.workload, ProfileDefault}] {
			v := (g - base) * (1 << 20) / pods
			out = append(out, Ratio{
				Name:  fmt.Sprintf("%s scheduler live-heap growth %s - default, bytes per pod arrived (steady windows)", k.workload, k.profile),
				Value: v, Target: fmt.Sprintf("<= %d", maxChurnGrowthPerPodB), Holds: new(v <= maxChurnGrowthPerPodB),
			})
		}
	}
	return out
}

// heldHeap is the live heap a run's scheduler holds.
func heldHeap(res Result) float64 { return res.LiveHeapMiB }

// maxHeapPerPod is the budget for Caldera's memory per pod.
const maxHeapPerPod = 1024

// heapPerPod is M1: for each workload with live-heap samples, Caldera's
// scheduler's held heap beyond the default profile's, in bytes per prebound
// pod. Both schedulers hold the same pods in their shared pod informer, so
// the difference is Caldera's informers and cache.
func (r *Report) heapPerPod() []Ratio {
	var out []Ratio
	seen := map[string]bool{}
	for _, res := range r.Results {
		if res.LiveHeapMiB == 0 || res.Prebound == 0 || seen[res.Workload] {
			continue
		}
		seen[res.Workload] = true
		cal, ok1 := r.median(res.Workload, ProfileCaldera, heldHeap)
		def, ok2 := r.median(res.Workload, ProfileDefault, heldHeap)
		if !ok1 || !ok2 {
			continue
		}
		v := (cal - def) * (1 << 20) / float64(res.Prebound)
		out = append(out, Ratio{
			Name:   fmt.Sprintf("M1 (%s, %d bound pods) held heap caldera - default, bytes per pod", res.Workload, res.Prebound),
			Value:  v,
			Target: fmt.Sprintf("<= %d", maxHeapPerPod),
			Holds:  new(v <= maxHeapPerPod),
		})
	}
	return out
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes the machine, the results table and the ratios.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Size `%s`, started %s. Machine: %d CPUs (%s), %s RAM, kernel %s, %s; load average at start %s.\n\n",
		r.Size, r.Started.UTC().Format(time.RFC3339), m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.GoVersion, m.LoadAvg)
	b.WriteString("| workload | profile | run | nodes | pods | bound | time s | created s | 1st bind s | CPU s | sched CPU s | sched sys s | sched faults k | pods/s avg | pods/s p50 | attempts | attempt p50 ms | attempt p99 ms | gang bind p50 s | p99 s | max s | peak heap MiB | peak RSS MiB | held heap MiB | error |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, x := range r.Results {
		gang := "| - | - | -"
		if x.GroupSize > 1 {
			gang = fmt.Sprintf("| %.2f | %.2f | %.2f", x.GangBindP50, x.GangBindP99, x.GangBindMax)
		}
		name := x.Workload
		if x.Prebound > 0 {
			name = fmt.Sprintf("%s (+%d bound)", x.Workload, x.Prebound)
		}
		held := "-"
		if x.LiveHeapMiB > 0 {
			held = fmt.Sprintf("%.1f", heldHeap(x))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f | %.0f | %.0f | %d | %.2f | %.2f %s | %.0f | %.0f | %s | %s |\n",
			name, x.Profile, x.Run, x.Nodes, x.Pods, x.Bound, x.Seconds, x.CreateSeconds, x.FirstBindSeconds, x.CPUSeconds, x.SchedulerCPUSeconds,
			x.SchedulerSysSeconds, float64(x.SchedulerFaults)/1000, x.PodsPerSecAvg, x.PodsPerSecP50,
			x.Attempts, x.AttemptP50Ms, x.AttemptP99Ms, gang, x.PeakHeapMiB, x.PeakRSSMiB, held, x.Error)
	}
	writeWindows(&b, r.Results)
	writeTimings(&b, r.Results)
	if len(r.Ratios) > 0 {
		b.WriteString("\n| ratio (medians over runs) | value | target | holds |\n| --- | ---: | --- | --- |\n")
		for _, x := range r.Ratios {
			holds := "-"
			if x.Holds != nil {
				holds = map[bool]string{true: "yes", false: "**no**"}[*x.Holds]
			}
			fmt.Fprintf(&b, "| %s | %.2f | %s | %s |\n", x.Name, x.Value, x.Target, holds)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeWindows writes one row per churn run: each window's bound pods/s,
// gang bind p50 and the scheduler's live heap, then the decay figures.
func writeWindows(b *strings.Builder, results []Result) {
	header := false
	for _, x := range results {
		if len(x.Windows) == 0 {
			continue
		}
		if !header {
			header = true
			b.WriteString("\nChurn: one value per window, from the first arrival; * marks the first steady window. Heaps are the scheduler process's live heap after a forced GC.\n\n")
			b.WriteString("| workload | profile | run | created pods/s | bound pods/s | finished pods/s | gang bind p50 s | sched live heap MiB | bound last / first steady | bound / created, steady | sched heap end / after warm-up | sched heap growth (fit) MiB | sched heap start -> drained MiB |\n")
			b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
		}
		steady := -1
		if x.Decay != nil {
			steady = x.Decay.FirstSteady
		}
		window := 0.0
		if len(x.Windows) > 1 {
			window = x.Windows[1].StartSeconds - x.Windows[0].StartSeconds
		}
		col := func(f func(Window) string) string {
			parts := make([]string, len(x.Windows))
			for i, w := range x.Windows {
				parts[i] = f(w)
				if i == steady {
					parts[i] += "*"
				}
			}
			return strings.Join(parts, " ")
		}
		perSec := func(n int) string {
			if window == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", float64(n)/window)
		}
		decay, keptUp, heap, growth, drained := "-", "-", "-", "-", "-"
		if x.Decay != nil {
			decay, keptUp = fmt.Sprintf("%.2f", x.Decay.Throughput), fmt.Sprintf("%.2f", x.Decay.KeptUp)
			if x.Decay.HeapDrainedMiB > 0 {
				drained = fmt.Sprintf("%.1f -> %.1f", x.Decay.HeapStartMiB, x.Decay.HeapDrainedMiB)
			}
			if x.Decay.Heap > 0 {
				growth = fmt.Sprintf("%.1f", x.Decay.HeapGrowthMiB)
				heap = fmt.Sprintf("%.2f (%.1f -> %.1f MiB)", x.Decay.Heap, x.Decay.HeapWarmMiB, x.Decay.HeapEndMiB)
			}
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Workload, x.Profile, x.Run,
			col(func(w Window) string { return perSec(w.Created) }),
			col(func(w Window) string { return fmt.Sprintf("%.1f", w.BoundPerSec) }),
			col(func(w Window) string { return perSec(w.Finished) }),
			col(func(w Window) string { return fmt.Sprintf("%.2f", w.GangBindP50) }),
			col(func(w Window) string { return fmt.Sprintf("%.1f", w.HeapMiB) }),
			decay, keptUp, heap, growth, drained)
	}
}
