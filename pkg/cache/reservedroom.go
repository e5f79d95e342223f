package cache

// What the scheduler's Filter reads of the reservations over time
// (timeplan.go): admission refuses what would delay a reservation, but
// kube-scheduler places an admitted pod on any node that fits it, and
// would put it into reserved room as readily as into room no one needs.

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// ReservedRoom returns, per node, the holds that pod must leave room for
// if it is placed there at now: those of the last pass's reservations
// that start before pod's run-time limit ends (every one, without a
// limit), other than its own group's. Nil when there is nothing to leave
// (most pods, and every pod while no group holds a reservation). O(held
// nodes).
func (c *Cache) ReservedRoom(pod *v1.Pod, now time.Time) map[string][]admission.NodeHold {
	// Read without the lock: most pods are placed while no group holds a
	// reservation, and their Filter then takes no lock.
	if !c.feasible.AnyReservation() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.adm.On() {
		return nil
	}
	var group map[string]string
	if key, member := gangbook.GroupKeyOf(pod); member {
		group = admission.GroupAnnotations(c.groups[key])
	}
	return c.adm.ReservedRoomLocked(pod, group, now)
}
