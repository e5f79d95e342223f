package perf

import (
	"bytes"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
)

const metricsText = `# HELP scheduler_scheduling_attempt_duration_seconds x
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{le="0.001",profile="a",result="scheduled"} 1
scheduler_scheduling_attempt_duration_seconds_bucket{le="0.002",profile="a",result="scheduled"} 3
scheduler_scheduling_attempt_duration_seconds_bucket{le="0.004",profile="a",result="scheduled"} 4
scheduler_scheduling_attempt_duration_seconds_bucket{le="+Inf",profile="a",result="scheduled"} 4
scheduler_scheduling_attempt_duration_seconds_bucket{le="0.001",profile="a",result="unschedulable"} 0
scheduler_scheduling_attempt_duration_seconds_bucket{le="0.002",profile="a",result="unschedulable"} 0
scheduler_scheduling_attempt_duration_seconds_bucket{le="0.004",profile="a",result="unschedulable"} 2
scheduler_scheduling_attempt_duration_seconds_bucket{le="+Inf",profile="a",result="unschedulable"} 2
scheduler_scheduling_attempt_duration_seconds_bucket{le="0.001",profile="b",result="scheduled"} 100
scheduler_scheduling_attempt_duration_seconds_bucket{le="+Inf",profile="b",result="scheduled"} 100
scheduler_scheduling_attempt_duration_seconds_sum{profile="a",result="scheduled"} 0.007
`

func TestParseHistogram(t *testing.T) {
	h := parseHistogram([]byte(metricsText), attemptMetric, map[string]string{"profile": "a"})
	if got := h.total(); got != 6 {
		t.Fatalf("total = %v, want 6 (both results of profile a)", got)
	}
	// Ranks: 1 in (0,1ms], 2 in (1,2ms], 3 in (2,4ms].
	for _, tc := range []struct{ q, want float64 }{
		{0.5, 0.002},                 // rank 3: the top of the second bucket
		{1.0 / 3, 0.0015},            // rank 2: half-way through the second bucket
		{0.99, 0.002 + 0.002*2.94/3}, // rank 5.94 of the third bucket's 3
	} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	before := parseHistogram([]byte(strings.ReplaceAll(metricsText, `result="unschedulable"} 2`, `result="unschedulable"} 0`)), attemptMetric, map[string]string{"profile": "a", "result": "unschedulable"})
	after := parseHistogram([]byte(metricsText), attemptMetric, map[string]string{"profile": "a", "result": "unschedulable"})
	if d := after.sub(before); d.total() != 2 || d.quantile(0.5) <= 0.002 {
		t.Fatalf("delta = %+v, want the 2 unschedulable attempts in (2ms, 4ms]", d)
	}
	if got := (histogram{}).quantile(0.5); got != 0 {
		t.Fatalf("empty histogram quantile = %v, want 0", got)
	}
}

func TestParseLabels(t *testing.T) {
	got := parseLabels(`a="x",b="y\"z",le="+Inf"`)
	if got["a"] != "x" || got["b"] != `y"z` || got["le"] != "+Inf" {
		t.Fatalf("parseLabels = %v", got)
	}
}

func TestThroughputAndPercentile(t *testing.T) {
	s := throughputSamples([]int{10, 30, 30, 60}, time.Second)
	if want := []float64{10, 20, 0, 30}; !slices.Equal(s, want) {
		t.Fatalf("samples = %v, want %v", s, want)
	}
	if got := percentile(s, 50); got != 10 {
		t.Fatalf("p50 = %v, want 10", got)
	}
	if got := percentile(s, 100); got != 30 {
		t.Fatalf("max = %v, want 30", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Fatalf("p50 of nothing = %v", got)
	}
}

func TestRatiosAndMarkdown(t *testing.T) {
	r := &Report{Size: "quick", Results: []Result{
		{Workload: "W1", Profile: ProfileDefault, Bound: 10, PodsPerSecAvg: 100},
		{Workload: "W1", Profile: ProfileCaldera, Bound: 10, PodsPerSecAvg: 90},
		{Workload: "W1", Profile: ProfileCaldera, Bound: 10, PodsPerSecAvg: 98},
		{Workload: "W1", Profile: ProfileCaldera, Bound: 10, PodsPerSecAvg: 99},
		{Workload: "W3-plain", Profile: ProfileDefault, Bound: 10, Seconds: 10},
		{Workload: "W3-gang", Profile: ProfileCaldera, Bound: 10, Seconds: 13, GroupSize: 10},
		{Workload: "W2", Profile: ProfileCaldera, Error: "timed out"},
		{Workload: "W5", Profile: ProfileCaldera, Bound: 1, SchedulerCPUSeconds: 38.3, SchedulerSysSeconds: 12.48, SchedulerFaults: 473161},
	}}
	r.ComputeRatios()
	got := map[string]Ratio{}
	for _, x := range r.Ratios {
		got[x.Name] = x
	}
	if x := got["W1 pods/s caldera / default"]; math.Abs(x.Value-0.98) > 1e-9 || x.Holds == nil || !*x.Holds {
		t.Errorf("W1 ratio = %+v, want the median 0.98, holding", x)
	}
	if x := got["W3 one-gang time caldera / as many plain pods default"]; math.Abs(x.Value-1.3) > 1e-9 || x.Holds == nil || *x.Holds {
		t.Errorf("W3 ratio = %+v, want 1.3, missed", x)
	}
	if _, ok := got["W2 pods/s caldera / default (no gang semantics)"]; ok {
		t.Errorf("a ratio from a failed run: %+v", got)
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| W1 | caldera | 0 |", "| 0.98 | >= 0.95 | yes |", "| 1.30 | <= 1.2 | **no** |", "timed out", "| 38.30 | 12.48 | 473 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	// Every row of the results table has the header's cells.
	lines := strings.Split(md.String(), "\n")
	header := strings.Count(lines[2], "|")
	for _, line := range lines[3:] {
		if line == "" {
			break
		}
		if n := strings.Count(line, "|"); n != header {
			t.Errorf("row has %d separators, header %d: %s", n, header, line)
		}
	}
}

func TestHeapPerPod(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []Result
		want    float64 // bytes per pod; <0: no M1 ratio
		holds   bool
	}{
		{
			name: "within budget",
			results: []Result{
				{Workload: "W5", Profile: ProfileDefault, Bound: 1, Prebound: 1024, LiveHeapMiB: 110},
				{Workload: "W5", Profile: ProfileCaldera, Bound: 1, Prebound: 1024, LiveHeapMiB: 110.5},
			},
			want: 512, holds: true,
		},
		{
			name: "over budget",
			results: []Result{
				{Workload: "W5", Profile: ProfileDefault, Bound: 1, Prebound: 1024, LiveHeapMiB: 110},
				{Workload: "W5", Profile: ProfileCaldera, Bound: 1, Prebound: 1024, LiveHeapMiB: 112},
			},
			want: 2048, holds: false,
		},
		{
			name: "median over runs",
			results: []Result{
				{Workload: "W5", Profile: ProfileDefault, Bound: 1, Prebound: 1024, LiveHeapMiB: 100},
				{Workload: "W5", Profile: ProfileCaldera, Bound: 1, Prebound: 1024, LiveHeapMiB: 100.25},
				{Workload: "W5", Profile: ProfileCaldera, Bound: 1, Prebound: 1024, LiveHeapMiB: 100.5},
				{Workload: "W5", Profile: ProfileCaldera, Bound: 1, Prebound: 1024, LiveHeapMiB: 130},
			},
			want: 512, holds: true,
		},
		{
			name: "no default run",
			results: []Result{
				{Workload: "W5", Profile: ProfileCaldera, Bound: 1, Prebound: 1024, LiveHeapMiB: 100},
			},
			want: -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Results: tc.results}
			got := r.heapPerPod()
			if tc.want < 0 {
				if len(got) != 0 {
					t.Fatalf("heapPerPod = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || math.Abs(got[0].Value-tc.want) > 1e-6 || got[0].Holds == nil || *got[0].Holds != tc.holds {
				t.Fatalf("heapPerPod = %+v, want %v bytes, holds %v", got, tc.want, tc.holds)
			}
		})
	}
}

func TestStable(t *testing.T) {
	for _, tc := range []struct {
		xs   []uint64
		want bool
	}{
		{[]uint64{1000, 1000, 1000}, true},
		{[]uint64{1000, 1010, 1005}, true},
		{[]uint64{1170, 973, 972}, false}, // still falling (W5 at 50,000 pods, Caldera)
		{[]uint64{1000, 1011, 1000}, false},
	} {
		if got := stable(tc.xs, 0.01); got != tc.want {
			t.Errorf("stable(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

func TestParseHeapAlloc(t *testing.T) {
	// What /debug/pprof/heap?debug=1 serves: this process's own profile.
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	got, err := parseHeapAlloc(&b)
	if err != nil || got == 0 {
		t.Fatalf("parseHeapAlloc = %d, %v; want the HeapAlloc of a debug=1 heap profile", got, err)
	}
	if _, err := parseHeapAlloc(strings.NewReader("heap profile: 0: 0 [0: 0] @ heap/1048576\n")); err == nil {
		t.Errorf("parseHeapAlloc without a HeapAlloc line: want an error")
	}
}

func TestSetCPU(t *testing.T) {
	// This process stands for the scheduler's; readings "before" of -1 and
	// -2 (sys -3) make every figure at least 1, 2 or 3 however little CPU
	// was used; a process has always faulted some pages in since it began.
	proc := &schedulerProc{pid: os.Getpid()}
	before := procStat{cpu: -2, sys: -3}
	var own, ext, inProcess Result
	own.setCPU(proc, false, -1, before)
	if own.SchedulerCPUSeconds < 2 || own.CPUSeconds < own.SchedulerCPUSeconds+1 {
		t.Errorf("own process: CPU %.2f, scheduler %.2f; want the scheduler's in both, this process's added", own.CPUSeconds, own.SchedulerCPUSeconds)
	}
	if own.SchedulerSysSeconds < 3 || own.SchedulerFaults == 0 {
		t.Errorf("own process: sys %.2f s, %d faults; want the scheduler process's kernel time and faults", own.SchedulerSysSeconds, own.SchedulerFaults)
	}
	if got := (procStat{}).sub(procStat{cpu: 1, faults: 5}); got.faults != 0 || got.cpu != -1 {
		t.Errorf("a failed reading after a good one: %+v, want no faults", got)
	}
	ext.setCPU(proc, true, -1, before)
	if ext.CPUSeconds < 2 || ext.SchedulerCPUSeconds != 0 || ext.SchedulerSysSeconds < 3 {
		t.Errorf("external: CPU %.2f, scheduler %.2f, sys %.2f; want the scheduler process's only", ext.CPUSeconds, ext.SchedulerCPUSeconds, ext.SchedulerSysSeconds)
	}
	inProcess.setCPU(nil, false, -1, before)
	if inProcess.CPUSeconds < 1 || inProcess.SchedulerCPUSeconds != 0 || inProcess.SchedulerSysSeconds != 0 || inProcess.SchedulerFaults != 0 {
		t.Errorf("in-process: CPU %.2f, scheduler %.2f, sys %.2f, %d faults; want this process's, no split", inProcess.CPUSeconds,
			inProcess.SchedulerCPUSeconds, inProcess.SchedulerSysSeconds, inProcess.SchedulerFaults)
	}
}
