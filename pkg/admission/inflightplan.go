package admission

import (
	"slices"

	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/plan"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// inflightRoom is what an admitted, unplaced unit takes on a node.
type inflightRoom struct {
	key  queue.Key
	node int32
	req  []int64
}

// sinceMark is when an admitted unit was let in, and the last pass that
// found it unplaced.
type sinceMark struct {
	at  int64
	gen uint64
}

// markSince records that the pass saw key admitted and unplaced: from now
// if it is new, from its admission if it was let in before.
func (pp *passPlacement) markSince(key queue.Key) {
	tp := &pp.Tp
	if tp.since == nil {
		tp.since = map[queue.Key]sinceMark{}
	}
	s, ok := tp.since[key]
	if !ok {
		s.at = tp.now
	}
	s.gen = pp.gen
	tp.since[key] = s
}

// forgetPlaced drops the units no longer admitted and unplaced: those this
// pass neither admitted nor found unplaced. O(entries).
func (pp *passPlacement) forgetPlaced() {
	for k, s := range pp.Tp.since {
		if s.gen != pp.gen {
			delete(pp.Tp.since, k)
		}
	}
}

// noteInflight records where placeInflight put an admitted unit's members.
func (pp *passPlacement) noteInflight(key queue.Key, classes []placement.Class, steps []placement.Step) {
	pp.markSince(key)
	for _, s := range steps {
		pp.Tp.inflight = append(pp.Tp.inflight, inflightRoom{key, s.Node, classes[s.Class].Request})
	}
}

// addInflight gives the admitted, unplaced units with a limit their end
// in tl: by their admission plus their limit (since). Without it a
// backfilled job's room, taken but not yet bound, would never come back
// as far as the next pass knew, and the reservation it was let in around
// would move past it.
func (pp *passPlacement) addInflight(tl *plan.Timeline) {
	tp := &pp.Tp
	r := pp.Free.R
	limits := map[queue.Key]int64{}
	for _, f := range tp.inflight {
		lim, ok := limits[f.key]
		if !ok {
			lim = pp.limitOf(f.key)
			limits[f.key] = lim
		}
		if lim <= 0 || (pp.Free.Blocked != nil && pp.Free.Blocked[f.node]) {
			continue
		}
		row := slices.Clone(pp.Free.Free[int(f.node)*r : (int(f.node)+1)*r])
		for j, v := range f.req {
			row[j] += v
		}
		tl.SetFree(int(f.node), row) // Add takes it out again, with its release
		from := tp.now
		if s, ok := tp.since[f.key]; ok {
			from = s.at
		}
		a := plan.Alloc{Node: f.node, Request: f.req, End: from + lim}
		tl.Add(a)
		tp.temp = append(tp.temp, a)
	}
}
