package admission

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

// ReservationView is a reservation the last pass kept: for what-if, which
// shows where the live plan's reservations stand on its copy.
type ReservationView struct {
	// Unit is the reserved unit's key, pg:NAMESPACE/NAME.
	Unit  string    `json:"unit"`
	Start time.Time `json:"start"`
	// Nodes are where its members are planned to start.
	Nodes []string `json:"nodes,omitempty"`
}

// SeedReservationsLocked is the cache's SeedReservations on f, the
// cache's per-node room and reservations: what-if's, not the live
// scheduler's. It returns why each seed left out was. O(len(seeds)).
func (a *State) SeedReservationsLocked(f *FeasibleState, seeds []ReservationSeed) map[gangbook.GroupKey]string {
	f.Timed = f.Timed[:0]
	f.TimedBy = make(map[queue.Key]int, len(seeds))
	var skipped map[gangbook.GroupKey]string
	skip := func(k gangbook.GroupKey, why string) {
		if skipped == nil {
			skipped = map[gangbook.GroupKey]string{}
		}
		skipped[k] = why
	}
	for _, s := range seeds {
		key := GangUnitKey(s.Group)
		u := a.Units[key]
		_, twice := f.TimedBy[key]
		switch {
		case twice:
			skip(s.Group, SeedTwice)
		case u == nil:
			skip(s.Group, SeedNoUnit)
		case u.Admitted:
			skip(s.Group, SeedAdmitted)
		default:
			// No nodes: they are the pass's to choose. Without them the
			// pass's overrun check evicts nothing for a due seed (what-if
			// evicts nothing), and only the Filter, which what-if does not
			// run, would read them before the pass plans the seed again.
			f.TimedBy[key] = len(f.Timed)
			f.Timed = append(f.Timed, Timed{Key: key, Start: s.Start.Unix()})
		}
	}
	f.AnyTimed.Store(len(f.Timed) > 0)
	return skipped
}

// ReservationViews are the reservations the last pass kept, in its order.
// O(reservations).
func (f *FeasibleState) ReservationViews() []ReservationView {
	out := make([]ReservationView, 0, len(f.Timed))
	for _, t := range f.Timed {
		out = append(out, ReservationView{Unit: t.Key.String(), Start: time.Unix(t.Start, 0).UTC(), Nodes: slices.Clone(t.Nodes)})
	}
	return out
}
