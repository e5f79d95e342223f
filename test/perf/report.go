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
	// process (apiserver, etcd, scheduler, harness); external, by the
	// scheduler. On a shared machine it varies less than wall time.
	CPUSeconds float64 `json:"cpuSeconds"`
	// SchedulerCPUSeconds is the in-process scheduler's share of CPUSeconds
	// (goroutines labelled component=scheduler in the -perf.pprof profile),
	// 0 without profiles.
	SchedulerCPUSeconds float64 `json:"schedulerCpuSeconds"`
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
	// apiserver, scheduler, harness); external, the scheduler's RSS only.
	PeakHeapMiB float64 `json:"peakHeapMiB"`
	PeakRSSMiB  float64 `json:"peakRSSMiB"`
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
	b.WriteString("| workload | profile | run | nodes | pods | bound | time s | created s | 1st bind s | CPU s | sched CPU s | pods/s avg | pods/s p50 | attempts | attempt p50 ms | attempt p99 ms | gang bind p50 s | p99 s | max s | peak heap MiB | peak RSS MiB | error |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, x := range r.Results {
		gang := "| - | - | -"
		if x.GroupSize > 1 {
			gang = fmt.Sprintf("| %.2f | %.2f | %.2f", x.GangBindP50, x.GangBindP99, x.GangBindMax)
		}
		name := x.Workload
		if x.Prebound > 0 {
			name = fmt.Sprintf("%s (+%d bound)", x.Workload, x.Prebound)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f | %.0f | %d | %.2f | %.2f %s | %.0f | %.0f | %s |\n",
			name, x.Profile, x.Run, x.Nodes, x.Pods, x.Bound, x.Seconds, x.CreateSeconds, x.FirstBindSeconds, x.CPUSeconds, x.SchedulerCPUSeconds, x.PodsPerSecAvg, x.PodsPerSecP50,
			x.Attempts, x.AttemptP50Ms, x.AttemptP99Ms, gang, x.PeakHeapMiB, x.PeakRSSMiB, x.Error)
	}
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
