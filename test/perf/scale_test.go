package perf

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// TestTimingsBetween: a run's timing is the difference of two snapshots,
// its mean from the sums, and series without observations are left out.
func TestTimingsBetween(t *testing.T) {
	before := map[string]sample{
		"PostFilter": {h: histogram{bounds: []float64{0.01, 0.1, math.Inf(1)}, counts: []float64{1, 1, 1}}, count: 1, sum: 0.005},
		"Score":      {h: histogram{bounds: []float64{0.01, math.Inf(1)}, counts: []float64{2, 2}}, count: 2, sum: 0.01},
	}
	after := map[string]sample{
		"PostFilter": {h: histogram{bounds: []float64{0.01, 0.1, math.Inf(1)}, counts: []float64{1, 5, 5}}, count: 5, sum: 0.205},
		"Score":      before["Score"],
	}
	got := timingsBetween(before, after)
	pf, ok := got["PostFilter"]
	if !ok || pf.Count != 4 || math.Abs(pf.MeanMs-50) > 1e-9 {
		t.Fatalf("PostFilter = %+v, want 4 observations of mean 50 ms", pf)
	}
	if pf.P50Ms <= 10 || pf.P50Ms > 100 {
		t.Errorf("PostFilter p50 = %v ms, want within the (10, 100] ms bucket", pf.P50Ms)
	}
	if _, ok := got["Score"]; ok {
		t.Errorf("Score had no observation in the run but is reported: %+v", got["Score"])
	}
}

// TestScaleRatios: W7's PostFilter target applies at 5000 nodes only, W8's
// PreScore share is PreScore's mean over the cycle's, and both land in the
// report's tables.
func TestScaleRatios(t *testing.T) {
	r := &Report{Results: []Result{
		{Workload: "W7-5000", Profile: ProfileCaldera, Nodes: 5000, Pods: 200, Bound: 200, Seconds: 20, Evictions: 200,
			Timings: map[string]Timing{"PostFilter": {Count: 10, MeanMs: 40}}},
		{Workload: "W7-5000", Profile: ProfileDefault, Nodes: 5000, Pods: 200, Bound: 200, Seconds: 10, Evictions: 220,
			Timings: map[string]Timing{"PostFilter": {Count: 10, MeanMs: 60}}},
		{Workload: "W7", Profile: ProfileCaldera, Nodes: 100, Pods: 40, Bound: 40, Seconds: 1,
			Timings: map[string]Timing{"PostFilter": {Count: 3, MeanMs: 90}}},
		{Workload: "W8-256", Profile: ProfileCaldera, Nodes: 5000, Pods: 512, Bound: 512, Seconds: 5,
			Timings: map[string]Timing{"PreScore": {Count: 512, MeanMs: 3}, "algorithm": {Count: 512, MeanMs: 10}}},
	}}
	byName := map[string]Ratio{}
	for _, x := range r.scaleRatios() {
		byName[x.Name] = x
	}
	if x := byName["W7-5000 PostFilter mean ms, caldera"]; x.Value != 40 || x.Holds == nil || !*x.Holds {
		t.Errorf("caldera's 40 ms at 5000 nodes: %+v, want a held <= 50 target", x)
	}
	if x := byName["W7-5000 PostFilter mean ms, default"]; x.Holds == nil || *x.Holds {
		t.Errorf("default's 60 ms at 5000 nodes: %+v, want a missed target", x)
	}
	if x := byName["W7 PostFilter mean ms, caldera"]; x.Value != 90 || x.Holds != nil {
		t.Errorf("100 nodes: %+v, want the figure without a target", x)
	}
	if x := byName["W7-5000 evictions per preemptor pod, default"]; math.Abs(x.Value-1.1) > 1e-9 {
		t.Errorf("evictions per preemptor = %+v, want 1.1", x)
	}
	if x := byName["W7-5000 time until every preemptor runs, caldera / default"]; x.Value != 2 {
		t.Errorf("time ratio = %+v, want 2", x)
	}
	if x := byName["W8-256 PreScore / member cycle (means), caldera"]; math.Abs(x.Value-0.3) > 1e-9 || x.Holds == nil || *x.Holds {
		t.Errorf("PreScore share = %+v, want 0.3, missing its 0.2 target", x)
	}
	var md strings.Builder
	writeTimings(&md, r.Results)
	if !strings.Contains(md.String(), "| W7-5000 | caldera | 0 | 200 |") || !strings.Contains(md.String(), "10 / 40.00 /") {
		t.Errorf("timings table lacks W7's row:\n%s", md.String())
	}
}

// TestBoundPodsAreTheSameInEveryProfile: W5 compares two schedulers
// restarting over one cluster, so a bound pod differs between the profiles
// only in the scheduler it names; gang members carry their group's label
// and the scale-down annotations in both.
func TestBoundPodsAreTheSameInEveryProfile(t *testing.T) {
	w := Workload{Name: "W5", Nodes: 4, Prebound: 32, PreboundGangSize: 8}
	var def, cal Profile
	for _, p := range Profiles() {
		switch p.Name {
		case ProfileDefault:
			def = p
		case ProfileCaldera:
			cal = p
		}
	}
	for _, i := range []int{0, 15, 16, 31} {
		a, b := w.boundPod("ns", def, i), w.boundPod("ns", cal, i)
		b.Spec.SchedulerName = a.Spec.SchedulerName
		if !equality.Semantic.DeepEqual(a, b) {
			t.Errorf("bound pod %d differs between the profiles beyond its scheduler:\n default %+v\n caldera %+v", i, a.ObjectMeta, b.ObjectMeta)
		}
		member := i < 16 // two gangs of 8 of the 32 pods
		if _, labelled := a.Labels[v1alpha1.PodGroupLabel]; labelled != member {
			t.Errorf("bound pod %d: group label %v, want %v", i, labelled, member)
		}
	}
}
