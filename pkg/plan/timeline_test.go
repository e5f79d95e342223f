package plan

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// TestTimelineWith checks that laying extra releases over a kept timeline
// gives the timeline NewTimeline builds from all of them: the same free
// room, capacity and releases in time order (ties: the kept ones first),
// and the same reservation; the kept timeline is unchanged.
func TestTimelineWith(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 200 {
		const nodes, res = 4, 2
		var kept, extra []Alloc
		alloc := func() Alloc {
			a := Alloc{Node: int32(rng.IntN(nodes + 1)), Request: []int64{rng.Int64N(3), rng.Int64N(3)}, End: 1 + rng.Int64N(20)}
			if rng.IntN(3) == 0 {
				a.End, a.EstimatedEnd = Unbounded, 1+rng.Int64N(20)
			}
			return a
		}
		for range rng.IntN(6) {
			kept = append(kept, alloc())
		}
		for range rng.IntN(6) {
			extra = append(extra, alloc())
		}
		free := make([]int64, nodes*res)
		for i := range free {
			free[i] = rng.Int64N(4)
		}
		base := NewTimeline(res, make([]int64, nodes*res), kept)
		base.SetFree(1, []int64{9, 9}) // the kept timeline's free room is stale: With replaces it
		before := Timeline{r: base.r, n: base.n, free: slices.Clone(base.free), capacity: slices.Clone(base.capacity),
			at: slices.Clone(base.at), node: slices.Clone(base.node), est: slices.Clone(base.est), amt: slices.Clone(base.amt)}
		got := base.With(free, extra)
		want := NewTimeline(res, free, append(append([]Alloc(nil), kept...), extra...))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: With = %+v, want %+v", round, got, want)
		}
		if !reflect.DeepEqual(*base, before) {
			t.Fatalf("round %d: With changed the kept timeline", round)
		}
		g := Gang{Classes: []placement.Class{{Request: []int64{3, 1}, Count: 2}}, Limit: 5}
		r1, e1 := New(got, 0, 4).Reserve(g)
		r2, e2 := New(want, 0, 4).Reserve(g)
		if !reflect.DeepEqual(r1, r2) || (e1 == nil) != (e2 == nil) {
			t.Fatalf("round %d: reservation %+v/%v, want %+v/%v", round, r1, e1, r2, e2)
		}
	}
}
