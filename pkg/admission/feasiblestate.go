package admission

import (
	"sync/atomic"

	"github.com/caldera-sched/caldera/pkg/noderoom"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// FeasibleState is the cache's side of the placement check, guarded by
// Cache.mu.
type FeasibleState struct {
	// Rooms is every node's room, kept by node and pod events.
	Rooms noderoom.Rooms
	// inflight holds the admitted units that still reserve room (their
	// inflight is not empty): their unbound members are placed first in
	// every pass, so new admissions do not count their room as free.
	inflight map[queue.Key]*Unit
	// Reservations are the starving heads' reserved nodes (Reserve),
	// renewed by each pass that finds them still starving.
	Reservations map[queue.Key]*reservation
	// Timed are the reservations over time the last pass made
	// (timeplan.go), in the order it made them.
	Timed []Timed
	// TimedBy indexes timed by unit.
	TimedBy map[queue.Key]int
	// AnyTimed says whether timed is not empty, for ReservedRoom to answer
	// most pods without the cache's lock: it is asked in every
	// scheduling cycle, and most cycles run while nothing is reserved.
	AnyTimed atomic.Bool
	// Releases is the timeline of bound pods' ends the plans read.
	Releases releases
	Pass     passPlacement
	// Memos keep pending gangs' placement classes between passes.
	Memos map[queue.Key]*classMemo
	// pins are where the admitted units still placing were let in
	// (inflightpin.go).
	pins map[queue.Key]*pinned
}

// reservation is the nodes held for one starving group and the pass that
// last renewed them.
type reservation struct {
	nodes []string
	gen   uint64
}

// track keeps FeasibleState.inflight in step with u.inflight.
func (f *FeasibleState) track(u *Unit, gone bool) {
	if gone {
		delete(f.Memos, u.Key)
	}
	if len(u.Inflight) == 0 || gone {
		delete(f.inflight, u.Key)
		delete(f.pins, u.Key)
		return
	}
	if f.inflight == nil {
		f.inflight = map[queue.Key]*Unit{}
	}
	f.inflight[u.Key] = u
}
