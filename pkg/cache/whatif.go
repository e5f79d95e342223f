package cache

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
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
func (c *Cache) SeedReservations(seeds []admission.ReservationSeed) map[gangbook.GroupKey]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &c.feasible
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
		key := admission.GangUnitKey(s.Group)
		u := c.adm.Units[key]
		_, twice := f.TimedBy[key]
		switch {
		case twice:
			skip(s.Group, admission.SeedTwice)
		case u == nil:
			skip(s.Group, admission.SeedNoUnit)
		case u.Admitted:
			skip(s.Group, admission.SeedAdmitted)
		default:
			// No nodes: they are the pass's to choose. Without them the
			// pass's overrun check evicts nothing for a due seed (what-if
			// evicts nothing), and only the Filter, which what-if does not
			// run, would read them before the pass plans the seed again.
			f.TimedBy[key] = len(f.Timed)
			f.Timed = append(f.Timed, admission.Timed{Key: key, Start: s.Start.Unix()})
		}
	}
	f.AnyTimed.Store(len(f.Timed) > 0)
	return skipped
}

// Reservations are the reservations the last pass kept, in its order.
// O(reservations).
func (c *Cache) Reservations() []admission.ReservationView {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]admission.ReservationView, 0, len(c.feasible.Timed))
	for _, t := range c.feasible.Timed {
		out = append(out, admission.ReservationView{Unit: t.Key.String(), Start: time.Unix(t.Start, 0).UTC(), Nodes: slices.Clone(t.Nodes)})
	}
	return out
}

// AdmissionOf returns the admission view of pod's unit, false when the
// cache knows no such unit (yet). O(1).
func (c *Cache) AdmissionOf(pod *v1.Pod) (admission.UnitView, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.AdmissionOfLocked(pod, c.groups)
}
