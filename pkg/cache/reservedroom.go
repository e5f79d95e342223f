package cache

// What the scheduler's Filter reads of the reservations over time
// (timeplan.go): admission refuses what would delay a reservation, but
// kube-scheduler places an admitted pod on any node that fits it, and
// would put it into reserved room as readily as into room no one needs.

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// NodeHold is room a reservation holds on one node from Start: the pod
// being placed may take the node's free room now only while, at Start,
// what is free now plus what running pods have released by then still
// covers Need after it.
type NodeHold struct {
	// Reservation names the group it is for (pg:ns/name, pod:ns/name).
	Reservation string
	// Start is when it starts.
	Start time.Time
	// Need is what the reservations on the node that hold room at Start
	// take there (this one's and the earlier ones' still holding).
	Need resources.List
	// ReleasedBy is what pods running on the node when the reservation was
	// planned give back by Start, by their run-time limits.
	ReleasedBy resources.List
}

// ReservedRoom returns, per node, the holds that pod must leave room for
// if it is placed there at now: those of the last pass's reservations
// that start before pod's run-time limit ends (every one, without a
// limit), other than its own group's. Nil when there is nothing to leave
// (most pods, and every pod while no group holds a reservation). O(held
// nodes).
func (c *Cache) ReservedRoom(pod *v1.Pod, now time.Time) map[string][]NodeHold {
	f := &c.feasible
	if !f.anyTimed.Load() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(f.timed) == 0 || !c.adm.on() {
		return nil
	}
	own := ownUnit(pod)
	end := runlimit.Unbounded
	var group map[string]string
	if key, member := gangbook.GroupKeyOf(pod); member {
		group = groupAnnotations(c.groups[key])
	}
	if l, _ := c.adm.limitOfPod(pod, group); l.Bounded() {
		end = runlimit.EndOf(now, l) // it starts after now: rounded up, as the kubelet counts
	}
	var out map[string][]NodeHold
	for _, t := range f.timed {
		if t.key == own || t.start >= end {
			continue
		}
		for i, n := range t.nodes {
			if out == nil {
				out = map[string][]NodeHold{}
			}
			out[n] = append(out[n], NodeHold{Reservation: t.key.String(), Start: time.Unix(t.start, 0),
				Need: t.need[i], ReleasedBy: t.released[i]})
		}
	}
	for n, hs := range out {
		out[n] = f.cumulate(n, hs, own)
	}
	return out
}

// ownUnit is the admission unit pod belongs to: its gang's, or its own
// as a singleton.
func ownUnit(pod *v1.Pod) queue.Key {
	if key, member := gangbook.GroupKeyOf(pod); member {
		return gangUnitKey(key)
	}
	return podUnitKey(pod)
}

// cumulate makes each hold's Need what every reservation holding room on
// node at its start takes there: a later reservation's start finds the
// earlier ones' members still running unless they have ended.
func (f *feasibleState) cumulate(node string, hs []NodeHold, own queue.Key) []NodeHold {
	slices.SortFunc(hs, func(a, b NodeHold) int { return a.Start.Compare(b.Start) })
	out := make([]NodeHold, len(hs))
	for i, h := range hs {
		h.Need = f.needAt(node, h.Start.Unix(), own)
		out[i] = h
	}
	return out
}

// needAt is what the last pass's reservations other than own's that hold
// room at time at need on node.
func (f *feasibleState) needAt(node string, at int64, own queue.Key) resources.List {
	need := resources.List{}
	for _, t := range f.timed {
		if t.key == own || t.start > at || t.end <= at {
			continue
		}
		if k := slices.Index(t.nodes, node); k >= 0 {
			need.Add(t.need[k])
		}
	}
	return need
}
