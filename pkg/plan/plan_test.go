package plan

import (
	"errors"
	"slices"
	"testing"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// cls is a class of count members of req cpu (one resource) on nodes (nil:
// every node).
func cls(req int64, count int, nodes ...int32) placement.Class {
	return placement.Class{Request: []int64{req}, Count: count, Nodes: nodes}
}

func run(node int32, req, end int64) Alloc {
	return Alloc{Node: node, Request: []int64{req}, End: end}
}

// nodesOf lists the distinct nodes of steps, ascending.
func nodesOf(steps []placement.Step) []int32 {
	var out []int32
	for _, s := range steps {
		if !slices.Contains(out, s.Node) {
			out = append(out, s.Node)
		}
	}
	slices.Sort(out)
	return out
}

func TestReserve(t *testing.T) {
	for _, tc := range []struct {
		name       string
		free       []int64
		running    []Alloc
		gang       Gang
		start, end int64
		nodes      []int32
		guaranteed bool
		err        error
	}{
		{name: "fits now", free: []int64{4, 4}, gang: Gang{Classes: []placement.Class{cls(4, 2)}, Limit: 10},
			start: 0, end: 10, nodes: []int32{0, 1}, guaranteed: true},
		{name: "behind running pods with limits", free: []int64{0, 2, 0},
			running: []Alloc{run(0, 4, 100), run(1, 2, 50), run(2, 4, 30)},
			gang:    Gang{Classes: []placement.Class{cls(4, 2)}, Limit: 60},
			start:   50, end: 110, nodes: []int32{1, 2}, guaranteed: true},
		{name: "unbounded gang holds for ever", free: []int64{0},
			running: []Alloc{run(0, 4, 7)}, gang: Gang{Classes: []placement.Class{cls(4, 1)}},
			start: 7, end: Unbounded, nodes: []int32{0}, guaranteed: true},
		{name: "eligible nodes only", free: []int64{4, 0, 0},
			running: []Alloc{run(1, 4, 20), run(2, 4, 40)},
			gang:    Gang{Classes: []placement.Class{cls(4, 1, 2)}, Limit: 5},
			start:   40, end: 45, nodes: []int32{2}, guaranteed: true},
		{name: "two classes, eligible subsets", free: []int64{2, 0, 0},
			running: []Alloc{run(1, 4, 20), run(2, 4, 40)},
			gang:    Gang{Classes: []placement.Class{cls(2, 1, 0), cls(4, 1, 1, 2)}, Limit: 5},
			start:   20, end: 25, nodes: []int32{0, 1}, guaranteed: true},
		{name: "waits on an estimate", free: []int64{0, 0},
			running: []Alloc{{Node: 0, Request: []int64{4}, End: Unbounded, EstimatedEnd: 30}, run(1, 4, 90)},
			gang:    Gang{Classes: []placement.Class{cls(4, 1)}, Limit: 5},
			start:   30, end: 35, nodes: []int32{0}, guaranteed: false},
		{name: "never fits without an estimate", free: []int64{0},
			running: []Alloc{{Node: 0, Request: []int64{4}, End: Unbounded}},
			gang:    Gang{Classes: []placement.Class{cls(4, 1)}}, err: ErrNeverFits},
		{name: "larger than any node", free: []int64{4, 4},
			gang: Gang{Classes: []placement.Class{cls(5, 1)}}, err: ErrNeverFits},
		{name: "overdue pod expected right after now", free: []int64{0},
			running: []Alloc{run(0, 4, -5)}, gang: Gang{Classes: []placement.Class{cls(4, 1)}, Limit: 1},
			start: 1, end: 2, nodes: []int32{0}, guaranteed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(NewTimeline(1, tc.free, tc.running), 0, 4)
			r, err := p.Reserve(tc.gang)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if r.Start != tc.start || r.End != tc.end || r.Guaranteed != tc.guaranteed || !slices.Equal(nodesOf(r.Steps), tc.nodes) {
				t.Fatalf("got start %d end %d nodes %v guaranteed %v, want %d %d %v %v",
					r.Start, r.End, nodesOf(r.Steps), r.Guaranteed, tc.start, tc.end, tc.nodes, tc.guaranteed)
			}
		})
	}
}

// TestBackfill: the head "big" is reserved on n0 and n1 from 100 to 160;
// n2 is nobody's. Each job is checked alone against that plan.
func TestBackfill(t *testing.T) {
	setup := func() *Plan {
		tl := NewTimeline(1, []int64{2, 2, 2}, []Alloc{run(0, 2, 100), run(1, 2, 80)})
		p := New(tl, 0, 4)
		if r, err := p.Reserve(Gang{Key: "big", Classes: []placement.Class{cls(4, 2, 0, 1)}, Limit: 60}); err != nil || r.Start != 100 {
			t.Fatalf("reservation %+v, %v", r, err)
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		job   Job
		ok    bool
		nodes []int32
	}{
		{"ends in time: takes the reserved room", Job{Classes: []placement.Class{cls(2, 1, 0, 1)}, Limit: 100}, true, []int32{0}},
		{"ends too late: waits", Job{Classes: []placement.Class{cls(2, 1, 0, 1)}, Limit: 101}, false, nil},
		{"ends too late: goes round the reservation", Job{Classes: []placement.Class{cls(2, 1)}, Limit: 500}, true, []int32{2}},
		{"unbounded: only unreserved room", Job{Classes: []placement.Class{cls(2, 2)}}, false, nil},
		{"unbounded, small enough for the unreserved node", Job{Classes: []placement.Class{cls(1, 2)}}, true, []int32{2}},
		{"loan from another queue ending before the reservation", Job{Classes: []placement.Class{cls(2, 3)}, Limit: 99}, true, []int32{0, 1, 2}},
		{"larger than any node now", Job{Classes: []placement.Class{cls(3, 1)}, Limit: 1}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := setup()
			steps, ok := p.CanBackfill(tc.job)
			if ok != tc.ok || !slices.Equal(nodesOf(steps), tc.nodes) {
				t.Fatalf("got %v %v, want %v on %v", ok, steps, tc.ok, tc.nodes)
			}
		})
	}
}

// TestBackfillSlack: a reservation needing part of a node leaves the rest
// to anyone, unbounded jobs included, and Commit uses it up.
func TestBackfillSlack(t *testing.T) {
	p := New(NewTimeline(1, []int64{2}, []Alloc{run(0, 4, 10)}), 0, 4)
	if r, err := p.Reserve(Gang{Classes: []placement.Class{cls(4, 1)}, Limit: 5}); err != nil || r.Start != 10 {
		t.Fatalf("reservation %+v, %v", r, err)
	}
	unbounded := Job{Classes: []placement.Class{cls(1, 1)}}
	for i, want := range []bool{true, true, false} {
		steps, ok := p.CanBackfill(unbounded)
		if ok != want {
			t.Fatalf("job %d: %v, want %v", i, ok, want)
		}
		if ok {
			p.Commit(unbounded, steps)
		}
	}
	// Room now is gone, so a short job waits too.
	if _, ok := p.CanBackfill(Job{Classes: []placement.Class{cls(1, 1)}, Limit: 1}); ok {
		t.Fatal("a job with no room now was accepted")
	}
}

func TestDepthBound(t *testing.T) {
	p := New(NewTimeline(1, []int64{4}, nil), 0, 2)
	g := Gang{Classes: []placement.Class{cls(1, 1)}, Limit: 1}
	for i, want := range []error{nil, nil, ErrDepth} {
		if _, err := p.Reserve(g); !errors.Is(err, want) {
			t.Fatalf("reservation %d: %v, want %v", i, err, want)
		}
	}
	if _, err := New(NewTimeline(1, []int64{4}, nil), 0, 0).Reserve(g); !errors.Is(err, ErrDepth) {
		t.Fatalf("depth 0: %v", err)
	}
}

// TestReservationsInOrder: the second head waits for the first one's end
// where they compete, and goes before it where it can finish in time.
func TestReservationsInOrder(t *testing.T) {
	tl := NewTimeline(1, []int64{0, 0}, []Alloc{run(0, 4, 10), run(1, 4, 50)})
	for _, tc := range []struct {
		name         string
		second       Gang
		start, end   int64
		nodes        []int32
		firstOverlap bool
	}{
		{"same nodes: after the first ends", Gang{Classes: []placement.Class{cls(4, 2)}, Limit: 10}, 110, 120, []int32{0, 1}, false},
		{"short: before the first starts", Gang{Classes: []placement.Class{cls(4, 1)}, Limit: 40}, 10, 50, []int32{0}, false},
		{"too long to go first, no free node: after", Gang{Classes: []placement.Class{cls(4, 1)}, Limit: 41}, 110, 151, []int32{0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tl, 0, 4)
			first, err := p.Reserve(Gang{Key: "first", Classes: []placement.Class{cls(4, 2)}, Limit: 60})
			if err != nil || first.Start != 50 || first.End != 110 {
				t.Fatalf("first %+v, %v", first, err)
			}
			r, err := p.Reserve(tc.second)
			if err != nil || r.Start != tc.start || r.End != tc.end || !slices.Equal(nodesOf(r.Steps), tc.nodes) {
				t.Fatalf("second %+v, %v; want %d-%d on %v", r, err, tc.start, tc.end, tc.nodes)
			}
		})
	}
}

// TestGuaranteed: a reservation waiting on an estimate is estimated, and so
// is a later one sharing a node with it before its end; one on other nodes
// is not.
func TestGuaranteed(t *testing.T) {
	tl := NewTimeline(1, []int64{0, 0, 0}, []Alloc{
		{Node: 0, Request: []int64{4}, End: Unbounded, EstimatedEnd: 20},
		run(1, 4, 30), run(2, 4, 30),
	})
	p := New(tl, 0, 4)
	for _, tc := range []struct {
		gang       Gang
		start      int64
		guaranteed bool
	}{
		{Gang{Key: "est", Classes: []placement.Class{cls(4, 1, 0)}, Limit: 10}, 20, false},
		{Gang{Key: "after-est", Classes: []placement.Class{cls(4, 1, 0)}, Limit: 10}, 30, false},
		{Gang{Key: "elsewhere", Classes: []placement.Class{cls(4, 1, 1)}, Limit: 10}, 30, true},
	} {
		r, err := p.Reserve(tc.gang)
		if err != nil || r.Start != tc.start || r.Guaranteed != tc.guaranteed {
			t.Fatalf("%s: %+v %v, want start %d guaranteed %v", tc.gang.Key, r, err, tc.start, tc.guaranteed)
		}
	}
}

// TestCommitThenReserve: a committed job's room is gone until its end for
// the reservations made after it.
func TestCommitThenReserve(t *testing.T) {
	p := New(NewTimeline(1, []int64{4, 0}, []Alloc{run(1, 4, 100)}), 0, 4)
	job := Job{Classes: []placement.Class{cls(4, 1)}, Limit: 30}
	steps, ok := p.CanBackfill(job)
	if !ok {
		t.Fatal("no reservation yet, the job should fit")
	}
	p.Commit(job, steps)
	r, err := p.Reserve(Gang{Classes: []placement.Class{cls(4, 1)}, Limit: 5})
	if err != nil || r.Start != 30 || !slices.Equal(nodesOf(r.Steps), []int32{0}) {
		t.Fatalf("%+v %v, want start 30 on n0", r, err)
	}
}

// TestTimelineIncremental: Add and Remove keep the timeline equal to one
// built from scratch.
func TestTimelineIncremental(t *testing.T) {
	pods := []Alloc{run(0, 1, 30), run(1, 2, 10), {Node: 0, Request: []int64{3}, End: Unbounded, EstimatedEnd: 20},
		run(1, 1, 10), {Node: 1, Request: []int64{1}, End: Unbounded}}
	inc := NewTimeline(1, []int64{10, 10}, nil)
	for _, a := range pods {
		inc.Add(a)
	}
	if !inc.Remove(pods[1]) || inc.Remove(pods[1]) {
		t.Fatal("Remove found the pod twice, or not once")
	}
	rest := slices.Delete(slices.Clone(pods), 1, 2)
	want := NewTimeline(1, []int64{10 - 1 - 3, 10 - 1 - 1}, rest)
	if !slices.Equal(inc.free, want.free) || !slices.Equal(inc.at, want.at) || !slices.Equal(inc.node, want.node) ||
		!slices.Equal(inc.est, want.est) || !slices.Equal(inc.amt, want.amt) || !slices.Equal(inc.capacity, want.capacity) {
		t.Fatalf("incremental %+v\nfrom scratch %+v", inc, want)
	}
	inc.SetFree(0, []int64{7})
	if inc.free[0] != 7 || inc.capacity[0] != 7+1+3 {
		t.Fatalf("SetFree: free %v capacity %v", inc.free, inc.capacity)
	}
}
