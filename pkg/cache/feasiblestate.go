package cache

import (
	"sync/atomic"

	"github.com/caldera-sched/caldera/pkg/noderoom"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// feasibleState is the cache's side of the placement check, guarded by
// Cache.mu.
type feasibleState struct {
	// rooms is every node's room, kept by node and pod events.
	rooms noderoom.Rooms
	// inflight holds the admitted units that still reserve room (their
	// inflight is not empty): their unbound members are placed first in
	// every pass, so new admissions do not count their room as free.
	inflight map[queue.Key]*unit
	// reservations are the starving heads' reserved nodes (Reserve),
	// renewed by each pass that finds them still starving.
	reservations map[queue.Key]*reservation
	// timed are the reservations over time the last pass made
	// (timeplan.go), in the order it made them.
	timed []timed
	// timedBy indexes timed by unit.
	timedBy map[queue.Key]int
	// anyTimed says whether timed is not empty, for ReservedRoom to answer
	// most pods without the cache's lock: it is asked in every
	// scheduling cycle, and most cycles run while nothing is reserved.
	anyTimed atomic.Bool
	// releases is the timeline of bound pods' ends the plans read.
	releases releases
	pass     passPlacement
	// memos keep pending gangs' placement classes between passes.
	memos map[queue.Key]*classMemo
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

// track keeps feasibleState.inflight in step with u.inflight.
func (f *feasibleState) track(u *unit, gone bool) {
	if gone {
		delete(f.memos, u.key)
	}
	if len(u.inflight) == 0 || gone {
		delete(f.inflight, u.key)
		delete(f.pins, u.key)
		return
	}
	if f.inflight == nil {
		f.inflight = map[queue.Key]*unit{}
	}
	f.inflight[u.key] = u
}
