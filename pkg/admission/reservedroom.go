package admission

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// PlacementLag is how much of the time between a unit's admission and its
// pods' placement the CalderaReservation Filter credits them: their limit
// is counted from the admission, as the plan counts it, while they are
// placed within PlacementLag of it. Volcano's controller creates a job's
// pods within a second of Inqueue and the scheduler binds them in the
// next; pods placed later than that (a unit the scheduler could not place
// for long) are counted from their own start, or a reservation planned
// at the unit's end would wait for their whole limit.
const PlacementLag = 5 * time.Second

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

// OwnUnit is the admission unit pod belongs to: its gang's, or its own
// as a singleton.
func OwnUnit(pod *v1.Pod) queue.Key {
	if key, member := gangbook.GroupKeyOf(pod); member {
		return GangUnitKey(key)
	}
	return PodUnitKey(pod)
}

// Cumulate makes each hold's Need what every reservation holding room on
// node at its start takes there: a later reservation's start finds the
// earlier ones' members still running unless they have ended.
func (f *FeasibleState) Cumulate(node string, hs []NodeHold, own queue.Key) []NodeHold {
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
func (f *FeasibleState) needAt(node string, at int64, own queue.Key) resources.List {
	need := resources.List{}
	for _, t := range f.Timed {
		if t.Key == own || t.Start > at || t.end <= at {
			continue
		}
		if k := slices.Index(t.Nodes, node); k >= 0 {
			need.Add(t.Need[k])
		}
	}
	return need
}

// AnyReservation reports whether the last pass kept a reservation; safe
// without the cache's lock.
func (f *FeasibleState) AnyReservation() bool { return f.AnyTimed.Load() }

// ReservedRoomLocked is the cache's ReservedRoom for pod, of the group
// whose annotations are group (nil outside a gang): per node, the holds
// of the last pass's reservations that start before pod's run-time limit
// ends (every one, without a limit), other than its own group's. O(held
// nodes).
func (a *State) ReservedRoomLocked(pod *v1.Pod, group map[string]string, now time.Time) map[string][]NodeHold {
	f := a.Feas
	if len(f.Timed) == 0 {
		return nil
	}
	own := OwnUnit(pod)
	end := runlimit.Unbounded
	if l, _ := a.LimitOfPod(pod, group); l.Bounded() {
		end = runlimit.EndOf(now, l) // it starts after now: rounded up, as the kubelet counts
		if s, ok := f.Pass.Tp.since[own]; ok {
			// Its unit is admitted: the reservations planned since were
			// placed around its end counted from its admission (limitOf).
			// Its pods bind a moment later (a Volcano job's are created
			// only then), and counted from now they would overlap those
			// reservations and be kept out of the room their own
			// admission took; the reservation behind starts that moment
			// later instead, by PlacementLag at most.
			planned := s.at + l.Hold() + 1
			end = min(end, max(planned, end-int64(PlacementLag/time.Second)))
		}
	}
	var out map[string][]NodeHold
	for _, t := range f.Timed {
		if t.Key == own || t.Start >= end {
			continue
		}
		for i, n := range t.Nodes {
			if out == nil {
				out = map[string][]NodeHold{}
			}
			out[n] = append(out[n], NodeHold{Reservation: t.Key.String(), Start: time.Unix(t.Start, 0),
				Need: t.Need[i], ReleasedBy: t.Released[i]})
		}
	}
	for n, hs := range out {
		out[n] = f.Cumulate(n, hs, own)
	}
	return out
}
