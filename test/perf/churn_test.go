package perf

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestChurnWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name                string
		n                   int
		binds, finishes     []time.Time
		groupStart, groupOK []time.Time
		want                []Window
	}{
		{
			name:  "binds per window, edges and outside dropped",
			n:     3,
			binds: []time.Time{at(0), at(9.99), at(10), at(25), at(29.999), at(30), at(-1)},
			want: []Window{
				{StartSeconds: 0, Bound: 2, BoundPerSec: 0.2},
				{StartSeconds: 10, Bound: 1, BoundPerSec: 0.1},
				{StartSeconds: 20, Bound: 2, BoundPerSec: 0.2},
			},
		},
		{
			name:       "gangs: created, finished and bind latency by the window of their last bind",
			n:          2,
			groupStart: []time.Time{at(1), at(2), at(9), at(15)},
			groupOK:    []time.Time{at(3), at(6), at(12), {}},
			finishes:   []time.Time{at(13), at(14), at(40)},
			want: []Window{
				// Latencies 2 s and 4 s complete in window 0: nearest-rank p50 is 2.
				{StartSeconds: 0, Created: 6, GangBindP50: 2},
				// Gang 2 (9 s -> 12 s) completes in window 1; gang 3 never does.
				{StartSeconds: 10, Created: 2, Finished: 4, GangBindP50: 3},
			},
		},
		{
			name: "no events",
			n:    2,
			want: []Window{{StartSeconds: 0}, {StartSeconds: 10}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := churnWindows(t0, 10*time.Second, tc.n, tc.binds, tc.finishes, tc.groupStart, tc.groupOK, 2)
			if len(got) != len(tc.want) {
				t.Fatalf("windows = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("window %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestDecayOf(t *testing.T) {
	// Ten pods arrive per window; a window binding x pods/s binds 10x pods
	// (10 s windows).
	ws := func(perSec, heap []float64) []Window {
		out := make([]Window, len(perSec))
		for i := range out {
			out[i] = Window{Created: 160, Bound: int(perSec[i] * 10), BoundPerSec: perSec[i], HeapMiB: heap[i]}
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		windows     []Window
		firstSteady int
		want        Decay
		ok          bool
	}{
		{
			name:        "steady and flat",
			windows:     ws([]float64{10, 16, 16, 15.2}, []float64{200, 220, 221, 231}),
			firstSteady: 1,
			// Heap 200, 220, 221, 231: least-squares slope 9.4 per window, over 3 windows.
			want: Decay{FirstSteady: 1, Throughput: 0.95, KeptUp: (160 + 160 + 152) / 480.0, HeapWarmMiB: 200, HeapEndMiB: 231, Heap: 1.155, HeapGrowthMiB: 28.2},
			ok:   true,
		},
		{
			name:        "decay after a later warm-up",
			windows:     ws([]float64{10, 12, 16, 16, 8}, []float64{1, 100, 200, 210, 300}),
			firstSteady: 2,
			// Heap 100, 200, 210, 300 from the warm-up: slope 61, over 3 windows.
			want: Decay{FirstSteady: 2, Throughput: 0.5, KeptUp: 400 / 480.0, HeapWarmMiB: 100, HeapEndMiB: 300, Heap: 3, HeapGrowthMiB: 183},
			ok:   true,
		},
		{
			name:        "no heap samples (external mode)",
			windows:     ws([]float64{10, 16, 16}, []float64{0, 0, 0}),
			firstSteady: 1,
			want:        Decay{FirstSteady: 1, Throughput: 1, KeptUp: 1},
			ok:          true,
		},
		{name: "steady window is the last", windows: ws([]float64{10, 16}, []float64{1, 1}), firstSteady: 1},
		{name: "no warm-up window", windows: ws([]float64{10, 16, 16}, []float64{1, 1, 1}), firstSteady: 0},
		{name: "nothing bound when steady", windows: ws([]float64{10, 0, 16}, []float64{1, 1, 1}), firstSteady: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := decayOf(tc.windows, tc.firstSteady)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if math.Abs(got.Throughput-tc.want.Throughput) > 1e-9 || math.Abs(got.Heap-tc.want.Heap) > 1e-9 || math.Abs(got.KeptUp-tc.want.KeptUp) > 1e-9 || math.Abs(got.HeapGrowthMiB-tc.want.HeapGrowthMiB) > 1e-9 ||
				got.FirstSteady != tc.want.FirstSteady || got.HeapWarmMiB != tc.want.HeapWarmMiB || got.HeapEndMiB != tc.want.HeapEndMiB {
				t.Fatalf("decay = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		ys   []float64
		want float64
	}{
		{[]float64{1, 2, 3}, 1},
		{[]float64{5, 5, 5, 5}, 0},
		{[]float64{130, 152, 142, 159}, 7.7},
		{[]float64{7}, 0},
		{nil, 0},
	} {
		if got := slope(tc.ys); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("slope(%v) = %v, want %v", tc.ys, got, tc.want)
		}
	}
}

func TestChurnPlan(t *testing.T) {
	for _, tc := range []struct {
		c                           Churn
		gangs, windows, firstSteady int
	}{
		{Churn{Duration: time.Minute, GangsPerSec: 2, RunTime: 10 * time.Second, Linger: 5 * time.Second, Window: 10 * time.Second}, 120, 6, 2},
		{Churn{Duration: 2 * time.Minute, GangsPerSec: 3, RunTime: 10 * time.Second, Linger: 10 * time.Second, Window: 10 * time.Second}, 360, 12, 2},
		{Churn{Duration: 65 * time.Second, GangsPerSec: 0.5, RunTime: 20 * time.Second, Linger: 1 * time.Second, Window: 10 * time.Second}, 32, 6, 3},
	} {
		if g, w, s := tc.c.gangs(), tc.c.windows(), tc.c.firstSteady(); g != tc.gangs || w != tc.windows || s != tc.firstSteady {
			t.Errorf("%+v: gangs, windows, first steady = %d, %d, %d; want %d, %d, %d", tc.c, g, w, s, tc.gangs, tc.windows, tc.firstSteady)
		}
	}
}

func TestChurnReport(t *testing.T) {
	d := func(tp, heap float64) *Decay {
		return &Decay{FirstSteady: 2, Throughput: tp, KeptUp: tp, Heap: heap, HeapWarmMiB: 200, HeapEndMiB: 200 * heap, HeapGrowthMiB: 200*heap - 200, SteadyCreated: 1024}
	}
	w := []Window{{StartSeconds: 0, Created: 160, Bound: 150, BoundPerSec: 15}, {StartSeconds: 10, Created: 160, Bound: 160, BoundPerSec: 16}, {StartSeconds: 20, BoundPerSec: 16}, {StartSeconds: 30, BoundPerSec: 14}}
	r := &Report{Results: []Result{
		{Workload: "W6", Profile: ProfileCaldera, Bound: 100, Windows: w, Decay: d(0.95, 1.05)},
		{Workload: "W6", Profile: ProfileCaldera, Bound: 100, Windows: w, Decay: d(0.80, 1.30)},
		{Workload: "W6", Profile: ProfileCaldera, Bound: 100, Windows: w, Decay: d(0.99, 1.02)},
		{Workload: "W6", Profile: ProfileDefault, Bound: 100, Windows: w, Decay: d(0.85, 1.02)},
		{Workload: "W6", Profile: ProfileUpstream, Bound: 100, Windows: w, Decay: d(0.95, 1.023)},
	}}
	r.ComputeRatios()
	got := map[string]Ratio{}
	for _, x := range r.Ratios {
		got[x.Name] = x
	}
	for _, tc := range []struct {
		name  string
		value float64
		holds bool
	}{
		{"W6 bound pods/s last window / first steady window, caldera", 0.95, true},
		{"W6 bound pods/s last window / first steady window, default", 0.85, false},
		// Median growth 10 MiB against default's 4 MiB, over 1024 pods.
		{"W6 scheduler live-heap growth caldera - default, bytes per pod arrived (steady windows)", 6 * 1024, false},
		{"W6 scheduler live-heap growth upstream-gang - default, bytes per pod arrived (steady windows)", 0.6 * 1024, true},
		{"W6 pods bound / created in the steady windows, caldera", 0.95, true},
		{"W6 pods bound / created in the steady windows, default", 0.85, false},
	} {
		x, ok := got[tc.name]
		if !ok || math.Abs(x.Value-tc.value) > 1e-9 || x.Holds == nil || *x.Holds != tc.holds {
			t.Errorf("%s = %+v (present %v), want %v holding %v", tc.name, x, ok, tc.value, tc.holds)
		}
	}
	if x := got["W6 scheduler live heap at end / after warm-up, caldera"]; math.Abs(x.Value-1.05) > 1e-9 || x.Holds != nil {
		t.Errorf("whole-process heap ratio = %+v, want 1.05 without a target", x)
	}
	if _, ok := got["W6 scheduler live-heap growth default - default, bytes per pod arrived (steady windows)"]; ok {
		t.Errorf("default compared with itself")
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| W6 | caldera | 0 | 16.0 16.0 0.0* 0.0 |", "| 15.0 16.0 16.0* 14.0 |", "| 0.95 | 0.95 | 1.05 (200.0 -> 210.0 MiB) |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}
