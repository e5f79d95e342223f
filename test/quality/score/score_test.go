package score

import (
	"math"
	"reflect"
	"testing"

	"github.com/caldera-sched/caldera/test/quality/trace"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// A hand-made run of two queues on 16 cores: the numbers follow from the
// definitions in the package comment.
func TestScore(t *testing.T) {
	queues := []trace.Queue{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 3, Reclaimable: true}}
	run := Run{
		Profile: "p", CapacityCPU: 16000, NodeCPU: 8000, End: 100, PartialNodeSeconds: 2.5, Evictions: 4,
		// Each eviction is judged by the state just before it: at 5 s a
		// holds 8 of a deserved 4, b 8 of 12; at 12 s b 8 of 8. At 11 s a
		// holds 8 (lent after the 10 s sample, which shows a holding
		// nothing) while b wants 8 more: a is above its deserved 4.
		EvictionLog: []Eviction{
			{T: 5, Queue: "a", CPU: 4000, Ran: 2, Before: Sample{
				Allocated: map[string]int64{"a": 8000, "b": 8000}, Pending: map[string]int64{"a": 4000, "b": 4000}}},
			{T: 5, Queue: "b", CPU: 4000, Ran: 10, Before: Sample{
				Allocated: map[string]int64{"a": 8000, "b": 8000}, Pending: map[string]int64{"a": 4000, "b": 4000}}},
			{T: 11, Queue: "a", CPU: 4000, Ran: 0.5, Before: Sample{
				Allocated: map[string]int64{"a": 8000, "b": 8000}, Pending: map[string]int64{"b": 8000}}},
			{T: 12, Queue: "b", CPU: 4000, Ran: 20, Before: Sample{Allocated: map[string]int64{"b": 8000}}},
		},
		Samples: []Sample{
			// Contended: demand 24 >= 16. Deserved 4 and 12; a holds 8, b 8.
			{T: 0, Allocated: map[string]int64{"a": 8000, "b": 8000}, Pending: map[string]int64{"a": 4000, "b": 4000}, Partial: 4000},
			// Not contended: demand 8 < 16; b alone, deserved 8, holds 8.
			{T: 10, Allocated: map[string]int64{"b": 8000}},
		},
		Jobs: []Job{
			{ID: 0, Queue: "a", Size: 1, Arrival: 0, Start: 10, End: 20},
			{ID: 1, Queue: "b", Size: 2, Arrival: 0, Start: 30, End: 50, PartialSeconds: 3},
			{ID: 2, Queue: "b", Size: 64, Arrival: 5, Start: -1, End: -1},
		},
	}
	r := Score(run, queues)
	if r.ContendedSamples != 1 || !near(r.ContendedUtilization, 1) || !near(r.ContendedUseful, 0.75) {
		t.Errorf("contended: %d samples, utilization %v, useful %v; want 1, 1, 0.75", r.ContendedSamples, r.ContendedUtilization, r.ContendedUseful)
	}
	if !near(r.Utilization[1], 0.5) {
		t.Errorf("utilization at 10 s = %v, want 0.5", r.Utilization[1])
	}
	if !near(r.Demand[0], 1.5) || !near(r.Demand[1], 0.5) {
		t.Errorf("demand %v, want [1.5 0.5]", r.Demand)
	}
	a, b := r.Queues[0], r.Queues[1]
	if !near(a.Deserved[0], 4) || !near(b.Deserved[0], 12) || !near(b.Deserved[1], 8) {
		t.Errorf("deserved a %v b %v, want [4 ..] and [12 8]", a.Deserved, b.Deserved)
	}
	if !near(a.MeanAbsError, 4) || !near(a.MeanRelError, 1) || !near(b.MeanAbsError, 4) || !near(b.MeanRelError, 4.0/12) {
		t.Errorf("share errors a %v/%v b %v/%v, want 4/1 and 4/0.33", a.MeanAbsError, a.MeanRelError, b.MeanAbsError, b.MeanRelError)
	}
	if r.Finished != 2 || r.Unfinished != 1 || r.Makespan != 0 {
		t.Errorf("finished %d unfinished %d makespan %v, want 2, 1 and none", r.Finished, r.Unfinished, r.Makespan)
	}
	if !near(r.MeanJCT, 35) {
		t.Errorf("mean JCT %v, want 35", r.MeanJCT)
	}
	// The job that never started waited 95 s by the end of the run.
	if !near(r.MaxWait, 95) || r.All.Jobs != 3 || r.NeverStarted != 1 || !near(r.All.P50, 30) || !near(r.All.Max, 95) {
		t.Errorf("waits: max %v, all %+v", r.MaxWait, r.All)
	}
	if w := r.ByClass["2-4"]; w.Jobs != 1 || !near(w.P99, 30) {
		t.Errorf("class 2-4 waits %+v", w)
	}
	if w := r.ByClass["32-64"]; w.Jobs != 1 || !near(w.P50, 95) {
		t.Errorf("class 32-64 waits %+v", w)
	}
	if r.MaxPartialSeconds != 3 || r.PartialNodeSeconds != 2.5 || r.Evictions != 4 {
		t.Errorf("partial %v / %v, evictions %d", r.MaxPartialSeconds, r.PartialNodeSeconds, r.Evictions)
	}
	// a was above its share at 5 and 11 s; b was below it at 5 s and at
	// it at 12 s.
	if r.EvictionsNotAboveShare != 2 {
		t.Errorf("%d evictions from queues not above their share, want 2", r.EvictionsNotAboveShare)
	}
	// 4 cores each, bound 2, 10, 0.5 and 20 s; two under FreshSeconds.
	if !near(r.EvictedWork, 130) || r.EvictedFresh != 2 {
		t.Errorf("evicted work %v core-s, %d fresh; want 130 and 2", r.EvictedWork, r.EvictedFresh)
	}
}

// Every job finished: the makespan is the last end.
func TestScoreMakespan(t *testing.T) {
	run := Run{CapacityCPU: 8000, Jobs: []Job{{Size: 1, Start: 1, End: 7}, {Size: 8, Arrival: 2, Start: 4, End: 9}}}
	if r := Score(run, nil); r.Makespan != 9 || r.Unfinished != 0 {
		t.Errorf("makespan %v unfinished %d, want 9 and 0", r.Makespan, r.Unfinished)
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{50: 5, 95: 10, 99: 10, 10: 1, 0: 1} {
		if got := Percentile(s, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
}

func TestScoreETA(t *testing.T) {
	eta := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		jobs []Job
		want ETAScore
	}{
		{name: "none", jobs: []Job{{Start: 5}, {Start: -1}}, want: ETAScore{Tolerance: 4}},
		{
			// Lateness -10, 0, 4 (within one wall second = 4 s), 5, and
			// 100 - 50 = 50 for the one never started (the run's end).
			// Every predecessor of the first three declared a limit.
			name: "mixed",
			jobs: []Job{
				{Start: 10, FirstETA: eta(20), PredecessorsLimited: true},
				{Start: 30, FirstETA: eta(30), PredecessorsLimited: true},
				{Start: 34, FirstETA: eta(30), PredecessorsLimited: true},
				{Start: 35, FirstETA: eta(30)},
				{Start: -1, FirstETA: eta(50)},
				{Start: 7, PredecessorsLimited: true}, // no ETA: not counted
			},
			want: ETAScore{
				ETAStats:  ETAStats{Jobs: 5, NeverStarted: 1, P10: -10, P50: 4, P90: 50, Max: 50, OnTime: 3, OnTimeShare: 0.6},
				Limited:   ETAStats{Jobs: 3, P10: -10, P50: 0, P90: 4, Max: 4, OnTime: 3, OnTimeShare: 1},
				Tolerance: 4, Lateness: []float64{-10, 0, 4, 5, 50}, LimitedLateness: []float64{-10, 0, 4},
			},
		},
		{
			// Estimated starts are scored apart: 12 - 10 = 2 (on time),
			// and 100 - 40 = 60 for one never started; a job given an
			// estimate, then a reservation, counts in both.
			name: "estimates",
			jobs: []Job{
				{Start: 12, FirstEstimate: eta(10)},
				{Start: -1, FirstEstimate: eta(40)},
				{Start: 30, FirstEstimate: eta(20), FirstETA: eta(30)},
			},
			want: ETAScore{
				ETAStats:  ETAStats{Jobs: 1, P10: 0, P50: 0, P90: 0, Max: 0, OnTime: 1, OnTimeShare: 1},
				Estimated: ETAStats{Jobs: 3, NeverStarted: 1, P10: 2, P50: 10, P90: 60, Max: 60, OnTime: 1, OnTimeShare: 1.0 / 3},
				Tolerance: 4, Lateness: []float64{0}, EstimatedLateness: []float64{2, 10, 60},
			},
		},
		{
			// Started before the run's end yet after its ETA: late,
			// with its predecessors' limits known or not.
			name: "late",
			jobs: []Job{{Start: 90, FirstETA: eta(10), PredecessorsLimited: true}},
			want: ETAScore{
				ETAStats:  ETAStats{Jobs: 1, P10: 80, P50: 80, P90: 80, Max: 80},
				Limited:   ETAStats{Jobs: 1, P10: 80, P50: 80, P90: 80, Max: 80},
				Tolerance: 4, Lateness: []float64{80}, LimitedLateness: []float64{80},
			},
		},
		{
			// Never started, its predecessors limited: counted late in
			// both, with the run's end as its start.
			name: "never started",
			jobs: []Job{{Start: -1, FirstETA: eta(96), PredecessorsLimited: true}, {Start: 12, FirstETA: eta(20)}},
			want: ETAScore{
				ETAStats:  ETAStats{Jobs: 2, NeverStarted: 1, P10: -8, P50: -8, P90: 4, Max: 4, OnTime: 1, OnTimeShare: 0.5},
				Limited:   ETAStats{Jobs: 1, NeverStarted: 1, P10: 4, P50: 4, P90: 4, Max: 4},
				Tolerance: 4, Lateness: []float64{-8, 4}, LimitedLateness: []float64{4},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScoreETA(tc.jobs, 100, 4); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ScoreETA =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestEvictionCause(t *testing.T) {
	for _, tc := range []struct {
		name    string
		e       Eviction
		cause   string
		overran bool
	}{
		{name: "plain reclaim", e: Eviction{Reason: ReasonReclaimed, Ran: 10, Limit: 40}, cause: CauseReclaim},
		{name: "preemption, on lent room", e: Eviction{Reason: ReasonPreempted, Lent: true}, cause: CausePreemption},
		{name: "lent room taken back", e: Eviction{Reason: ReasonReclaimed, Lent: true, Backfilled: true, ForReservation: true}, cause: CauseLending},
		{name: "backfill overstayed", e: Eviction{Reason: ReasonReclaimed, Backfilled: true, ForReservation: true, Ran: 50, Limit: 40}, cause: CauseBackfill, overran: true},
		// Evicted before the reservation it backfilled came due: the
		// reservation did not need the room yet.
		{name: "backfilled, evicted early", e: Eviction{Reason: ReasonReclaimed, Backfilled: true}, cause: CauseReclaim},
		{name: "backfill overstayed, no Event", e: Eviction{Backfilled: true, ForReservation: true}, cause: CauseBackfill},
		{name: "no Event", e: Eviction{Disruption: "PreemptionByScheduler: x"}, cause: CauseUnknown},
		// Past its limit into a reservation: the limit's overrun, whatever
		// room it started on; backfill's when it had backfilled.
		{name: "overran, lent", e: Eviction{Reason: ReasonOverran, Lent: true, Ran: 50, Limit: 40}, cause: CauseOverrun, overran: true},
		{name: "overran, backfilled", e: Eviction{Reason: ReasonOverran, Backfilled: true, ForReservation: true, Ran: 50, Limit: 40}, cause: CauseBackfill, overran: true},
		// No limit never overruns; exactly the limit is not past it.
		{name: "no limit", e: Eviction{Reason: ReasonReclaimed, Ran: 500}, cause: CauseReclaim},
		{name: "at its limit", e: Eviction{Reason: ReasonReclaimed, Ran: 40, Limit: 40}, cause: CauseReclaim},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.Cause(); got != tc.cause {
				t.Errorf("Cause() = %q, want %q", got, tc.cause)
			}
			if got := tc.e.Overran(); got != tc.overran {
				t.Errorf("Overran() = %v, want %v", got, tc.overran)
			}
		})
	}
}

// The causes are counted over the log, every cause present; backfilled
// and overrun victims whatever their cause.
func TestScoreEvictionCauses(t *testing.T) {
	run := Run{CapacityCPU: 8000, EvictionLog: []Eviction{
		{Reason: ReasonReclaimed, Lent: true, Ran: 60, Limit: 40},
		{Reason: ReasonReclaimed, Lent: true},
		{Reason: ReasonReclaimed, Backfilled: true},
		{Reason: ReasonReclaimed, Backfilled: true, ForReservation: true, Ran: 41, Limit: 40},
		{Reason: ReasonReclaimed},
		{Reason: ReasonOverran, Ran: 50, Limit: 40},
		{},
		// Its job's run had ended: no work lost.
		{Reason: ReasonOverran, Ran: 41, Limit: 40, CPU: 2000, Done: true},
	}}
	r := Score(run, nil)
	want := map[string]int{CauseLending: 2, CauseBackfill: 1, CauseOverrun: 2, CauseReclaim: 2, CausePreemption: 0, CauseUnknown: 1}
	if !reflect.DeepEqual(r.EvictionCauses, want) {
		t.Errorf("causes %v, want %v", r.EvictionCauses, want)
	}
	if r.EvictedBackfilled != 2 || r.EvictedOverran != 4 || r.EvictedWork != 0 {
		t.Errorf("%d backfilled, %d overran, %v core-s lost; want 2, 4 and 0", r.EvictedBackfilled, r.EvictedOverran, r.EvictedWork)
	}
}
