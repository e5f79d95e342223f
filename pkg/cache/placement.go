package cache

import (
	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// GangShape returns the minMember of pod's gang and how many of its members
// are active (not finished); ok is false for a pod outside any known gang.
// O(1).
func (c *Cache) GangShape(pod *v1.Pod) (minMember, active int, ok bool) {
	key, labelled := gangbook.GroupKeyOf(pod)
	if !labelled {
		return 0, 0, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.groups[key]
	if g == nil || g.Obj == nil {
		return 0, 0, false
	}
	return int(g.Spec.MinMember), g.Counts.Active, true
}

// GangPlacement returns GangShape's answers for pod's gang and appends to
// dst the node of every other member that holds one: bound, or reserved by
// the scheduler (assumed, waiting in Permit, binding), one entry per
// member; finished members hold none. These are the members the
// scheduler's snapshot has on nodes, provided every profile that places
// them records reservations (see Provider.TrackReservations). O(gang).
func (c *Cache) GangPlacement(pod *v1.Pod, dst []string) (minMember, active int, nodes []string, ok bool) {
	key, labelled := gangbook.GroupKeyOf(pod)
	if !labelled {
		return 0, 0, dst, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.groups[key]
	if g == nil || g.Obj == nil {
		return 0, 0, dst, false
	}
	for uid, m := range g.Members {
		if n := m.Node(); n != "" && uid != pod.UID {
			dst = append(dst, n)
		}
	}
	return int(g.Spec.MinMember), g.Counts.Active, dst, true
}
