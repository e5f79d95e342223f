package plan

import (
	"slices"
	"testing"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// A reservation planned again keeps its placement at its start when the
// search finds nothing earlier and that placement still fits; otherwise
// the search decides.
func TestReserveKeeps(t *testing.T) {
	// Two nodes of 4 cpu, n1 busy until 100. First-fit places a class
	// that may use any node before one tied to n0, so it fills n0 first.
	free := []int64{4, 0}
	running := []Alloc{run(1, 4, 100)}
	tied := []placement.Class{cls(3, 1), cls(3, 1, 0)}
	keep := []placement.Step{{Class: 0, Node: 1}, {Class: 1, Node: 0}}
	if res, err := New(NewTimeline(1, slices.Clone(free), running), 0, 4).Reserve(Gang{Classes: tied}); err == nil && res.Start <= 100 {
		t.Fatalf("premise: without its kept placement the gang is reserved at %d on %v, want first-fit to miss t=100", res.Start, res.Steps)
	}
	for _, tc := range []struct {
		name   string
		gang   Gang
		commit *Job // a job committed before the reservation
		start  int64
		steps  []placement.Step // nil: not checked
	}{
		{name: "kept where the search finds only a later start", gang: Gang{Classes: tied, Keep: keep, KeepAt: 100},
			start: 100, steps: keep},
		{name: "the search's earlier start wins", gang: Gang{Classes: []placement.Class{cls(3, 1)},
			Keep: []placement.Step{{Class: 0, Node: 1}}, KeepAt: 100}, start: 0,
			steps: []placement.Step{{Class: 0, Node: 0}}},
		{name: "at the same start the kept nodes win", gang: Gang{Classes: []placement.Class{cls(2, 1)},
			Keep: []placement.Step{{Class: 0, Node: 1}}, KeepAt: 100},
			commit: &Job{Classes: []placement.Class{cls(3, 1, 0)}, Limit: 100}, start: 100,
			steps: []placement.Step{{Class: 0, Node: 1}}},
		{name: "a kept placement that no longer fits is dropped", gang: Gang{Classes: []placement.Class{cls(3, 1)},
			Keep: []placement.Step{{Class: 0, Node: 1}}, KeepAt: 50}, start: 0},
		{name: "a kept placement of other counts is ignored", gang: Gang{Classes: []placement.Class{cls(3, 2)},
			Keep: []placement.Step{{Class: 0, Node: 1}}, KeepAt: 100}, start: 100},
		{name: "a kept placement on a node the class may not use is ignored", gang: Gang{Classes: []placement.Class{cls(3, 1, 0)},
			Keep: []placement.Step{{Class: 0, Node: 1}}, KeepAt: 0}, start: 0,
			steps: []placement.Step{{Class: 0, Node: 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(NewTimeline(1, slices.Clone(free), running), 0, 4)
			if tc.commit != nil {
				steps, ok := p.CanBackfill(*tc.commit)
				if !ok {
					t.Fatalf("premise: %+v cannot start now", *tc.commit)
				}
				p.Commit(*tc.commit, steps)
			}
			res, err := p.Reserve(tc.gang)
			if err != nil {
				t.Fatalf("Reserve: %v", err)
			}
			if res.Start != tc.start || (tc.steps != nil && !slices.Equal(res.Steps, tc.steps)) {
				t.Errorf("reserved at %d on %v, want %d on %v", res.Start, res.Steps, tc.start, tc.steps)
			}
		})
	}
}

// A kept placement that no longer fits at its start leaves the search's
// placement whole: the room a backfill job may use around the reservation
// is the search's, not what the failed fit left. Here the kept start is
// now and the pod it waited for outlasts its limit (so its room is
// expected just after now): the kept fit failed on n0, and before the fix
// the reservation's slack said n0 lent -4 and n2 lent 4, so a job without
// a limit started on n2, the room the reservation needs (found with
// Volcano's controller in the loop).
func TestFailedKeepLeavesTheSearchPlacement(t *testing.T) {
	free := []int64{0, 0, 4}
	running := []Alloc{run(0, 4, 100), run(1, 4, 700)}
	keep := []placement.Step{{Class: 0, Node: 0}, {Class: 0, Node: 2}}
	p := New(NewTimeline(1, free, running), 100, 4)
	res, err := p.Reserve(Gang{Classes: []placement.Class{cls(4, 2)}, Limit: 60, Keep: keep, KeepAt: 100})
	if err != nil || res.Start != 101 || !slices.Equal(res.Steps, keep) {
		t.Fatalf("premise: reserved %+v (%v), want at 101 on n0 and n2", res, err)
	}
	if steps, ok := p.CanBackfill(Job{Classes: []placement.Class{cls(4, 1)}}); ok {
		t.Errorf("a job without a limit starts on %v, in the room the reservation at 101 needs", steps)
	}
	if steps, ok := p.CanBackfill(Job{Classes: []placement.Class{cls(4, 1)}, Limit: 1}); !ok || !slices.Equal(steps, []placement.Step{{Class: 0, Node: 2}}) {
		t.Errorf("a job ending by 101 starts on %v (%v), want n2", steps, ok)
	}
}
