package cache

import (
	"time"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// placementLocked prepares the placement check for a pass: the nodes' free
// room, less what the admitted groups still being placed need (their members
// placed first, where the scheduler reserved them or first-fit), less the
// nodes reserved for starving groups. O(nodes x resources + admitted-unplaced
// members), never a scan of pods.
func (c *Cache) placementLocked(now time.Time) *admission.PassPlacement {
	f := &c.feasible
	pp := &f.Pass
	pp.Adm, pp.Feas, pp.Reclaim = c.adm, f, c.reclaim
	pp.Gen++
	pp.Prepare(&f.Rooms, c.total)
	pp.ResetTime(now)
	pp.ReservedBy = pp.ReservedBy[:0]
	pp.Pool.Ready = false
	pp.LastKey, pp.LastOK, pp.ClassKey = queue.Key{}, false, queue.Key{}
	pp.Unplaceable = pp.Unplaceable[:0]

	index := pp.Index
	// Admitted groups not placed yet: their members' room is not free.
	for _, u := range f.Inflight {
		pp.PlaceInflight(u, index)
	}
	// Reservations of the last pass hold until this pass renews or drops them.
	for key, res := range f.Reservations {
		for _, n := range res.Nodes {
			if i, ok := index[n]; ok {
				pp.Block(i, key)
			}
		}
	}
	return pp
}
