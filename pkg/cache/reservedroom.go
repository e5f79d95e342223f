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
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// ReservedRoom returns, per node, the holds that pod must leave room for
// if it is placed there at now: those of the last pass's reservations
// that start before pod's run-time limit ends (every one, without a
// limit), other than its own group's. Nil when there is nothing to leave
// (most pods, and every pod while no group holds a reservation). O(held
// nodes).
func (c *Cache) ReservedRoom(pod *v1.Pod, now time.Time) map[string][]admission.NodeHold {
	f := &c.feasible
	if !f.AnyTimed.Load() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(f.Timed) == 0 || !c.adm.On() {
		return nil
	}
	own := admission.OwnUnit(pod)
	end := runlimit.Unbounded
	var group map[string]string
	if key, member := gangbook.GroupKeyOf(pod); member {
		group = admission.GroupAnnotations(c.groups[key])
	}
	if l, _ := c.adm.LimitOfPod(pod, group); l.Bounded() {
		end = runlimit.EndOf(now, l) // it starts after now: rounded up, as the kubelet counts
	}
	var out map[string][]admission.NodeHold
	for _, t := range f.Timed {
		if t.Key == own || t.Start >= end {
			continue
		}
		for i, n := range t.Nodes {
			if out == nil {
				out = map[string][]admission.NodeHold{}
			}
			out[n] = append(out[n], admission.NodeHold{Reservation: t.Key.String(), Start: time.Unix(t.Start, 0),
				Need: t.Need[i], ReleasedBy: t.Released[i]})
		}
	}
	for n, hs := range out {
		out[n] = f.Cumulate(n, hs, own)
	}
	return out
}
