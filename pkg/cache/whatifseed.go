package cache

import (
	"slices"
	"time"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// ReservationSeed is one reservation the live scheduler published: a
// waiting PodGroup and its expected start (the
// scheduling.caldera.dev/expected-start annotation).
type ReservationSeed struct {
	Group gangbook.GroupKey
	Start time.Time
}

// Seed outcomes SeedReservations reports for the seeds it leaves out.
const (
	SeedNoUnit   = "its PodGroup has no unit in the snapshot"
	SeedAdmitted = "its unit is admitted in the snapshot"
	SeedTwice    = "named twice"
)

// SeedReservations is `kubectl caldera what-if`'s, not the live
// scheduler's: it gives a cache that has run no pass the reservations the
// live scheduler keeps between passes, as it published them, so that the
// next pass plans them first, in the order of seeds (by expected start),
// before any queue's turn, and holds every group to them as the live
// scheduler's next pass does. Without them a fresh cache knows no
// reservation, and admits a job the live scheduler refuses for delaying
// one whenever the job's queue is visited before the reserved group's.
// Only the units and their order are seeded: the pass plans each again,
// where and when the snapshot's room puts it (Reservations), and keeps it
// only when its group is refused in its queue's turn, as live. Seeds
// replace the reservations kept (a fresh cache keeps none). It returns why
// each seed left out was: a group with no unit in the cache, admitted
// there, or named twice. O(len(seeds)).
func (c *Cache) SeedReservations(seeds []ReservationSeed) map[gangbook.GroupKey]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &c.feasible
	f.timed = f.timed[:0]
	f.timedBy = make(map[queue.Key]int, len(seeds))
	var skipped map[gangbook.GroupKey]string
	skip := func(k gangbook.GroupKey, why string) {
		if skipped == nil {
			skipped = map[gangbook.GroupKey]string{}
		}
		skipped[k] = why
	}
	for _, s := range seeds {
		key := gangUnitKey(s.Group)
		u := c.adm.units[key]
		_, twice := f.timedBy[key]
		switch {
		case twice:
			skip(s.Group, SeedTwice)
		case u == nil:
			skip(s.Group, SeedNoUnit)
		case u.admitted:
			skip(s.Group, SeedAdmitted)
		default:
			// No nodes: they are the pass's to choose. Without them the
			// pass's overrun check evicts nothing for a due seed (what-if
			// evicts nothing), and only the Filter, which what-if does not
			// run, would read them before the pass plans the seed again.
			f.timedBy[key] = len(f.timed)
			f.timed = append(f.timed, timed{key: key, start: s.Start.Unix()})
		}
	}
	f.anyTimed.Store(len(f.timed) > 0)
	return skipped
}

// ReservationView is a reservation the last pass kept: for what-if, which
// shows where the live plan's reservations stand on its copy.
type ReservationView struct {
	// Unit is the reserved unit's key, pg:NAMESPACE/NAME.
	Unit  string    `json:"unit"`
	Start time.Time `json:"start"`
	// Nodes are where its members are planned to start.
	Nodes []string `json:"nodes,omitempty"`
}

// Reservations are the reservations the last pass kept, in its order.
// O(reservations).
func (c *Cache) Reservations() []ReservationView {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]ReservationView, 0, len(c.feasible.timed))
	for _, t := range c.feasible.timed {
		out = append(out, ReservationView{Unit: t.key.String(), Start: time.Unix(t.start, 0).UTC(), Nodes: slices.Clone(t.nodes)})
	}
	return out
}
