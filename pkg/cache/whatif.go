package cache

import (
	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
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
	return c.adm.SeedReservationsLocked(&c.feasible, seeds)
}

// Reservations are the reservations the last pass kept, in its order.
// O(reservations).
func (c *Cache) Reservations() []admission.ReservationView {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.feasible.ReservationViews()
}

// AdmissionOf returns the admission view of pod's unit, false when the
// cache knows no such unit (yet). O(1).
func (c *Cache) AdmissionOf(pod *v1.Pod) (admission.UnitView, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.AdmissionOfLocked(pod, c.groups)
}
