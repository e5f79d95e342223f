package plan

import (
	"cmp"
	"math"
	"slices"
)

// Unbounded is the end of an allocation, or the limit of a job, that has no
// run-time limit: its room is never released (as far as a guarantee goes).
const Unbounded int64 = math.MaxInt64

// Alloc is a running pod as the plan sees it: the room it holds on a node
// and when it gives that room back. Times are int64 seconds on any clock the
// caller keeps fixed (Unix seconds, say); a Plan's now is on the same clock.
type Alloc struct {
	// Node is the index of the node the pod runs on.
	Node int32
	// Request is what the pod holds, one amount per resource in the
	// Timeline's order (missing trailing amounts are 0).
	Request []int64
	// End is when the pod's declared run-time limit (activeDeadlineSeconds
	// from its start) expires: the latest time its room comes back.
	// Unbounded when the pod has no limit.
	End int64
	// EstimatedEnd is read only when End is Unbounded: the caller's guess of
	// when the pod ends (for example the learned run time of similar jobs
	// in its queue). 0 or Unbounded means no guess, and then the pod's room
	// never comes back. A reservation that waits for an estimated release
	// is only estimated (Reservation.Guaranteed is false): the pod may run
	// longer.
	EstimatedEnd int64
}

// release returns when a's room comes back and whether that is only a guess;
// ok is false when it never does.
func (a Alloc) release() (at int64, est, ok bool) {
	if a.End != Unbounded {
		return a.End, false, true
	}
	if a.EstimatedEnd != 0 && a.EstimatedEnd != Unbounded {
		return a.EstimatedEnd, true, true
	}
	return 0, false, false
}

// Timeline is the cluster's free room now and the release events of its
// running pods, sorted by time. It is long-lived: the caller builds it once
// (NewTimeline, O(E log E) for E running pods) and keeps it current from pod
// events with Add and Remove, so an admission pass does not sort 50,000
// pods again; a Plan reads it and never changes it. Release events are kept
// as dense parallel slices (struct of arrays) so a sweep over time touches
// only contiguous memory. Not safe for concurrent use.
type Timeline struct {
	r, n     int
	free     []int64 // n x r: free room now
	capacity []int64 // n x r: free now plus what the running pods hold
	at       []int64 // release times, ascending
	node     []int32 // per release: its node
	est      []bool  // per release: an estimated end, not a declared limit
	amt      []int64 // per release: r amounts
}

// NewTimeline returns the timeline of nodes whose free room now is free
// (len(free)/resources nodes, node i's amount of resource j at
// free[i*resources+j], with running's requests already taken out) and of
// the running pods. Pods on a node index out of range are ignored.
func NewTimeline(resources int, free []int64, running []Alloc) *Timeline {
	t := &Timeline{r: max(resources, 0)}
	if t.r > 0 {
		t.n = len(free) / t.r
	}
	t.free = slices.Clone(free[:t.n*t.r])
	t.capacity = slices.Clone(t.free)
	type ev struct {
		at int64
		i  int32
	}
	evs := make([]ev, 0, len(running))
	for i, a := range running {
		if !t.valid(a.Node) {
			continue
		}
		addRow(t.capacity[int(a.Node)*t.r:(int(a.Node)+1)*t.r], a.Request, 1)
		if at, _, ok := a.release(); ok {
			evs = append(evs, ev{at, int32(i)})
		}
	}
	slices.SortStableFunc(evs, func(x, y ev) int { return cmp.Compare(x.at, y.at) })
	t.at = make([]int64, 0, len(evs))
	t.node = make([]int32, 0, len(evs))
	t.est = make([]bool, 0, len(evs))
	t.amt = make([]int64, len(evs)*t.r)
	for k, e := range evs {
		a := running[e.i]
		_, est, _ := a.release()
		t.at, t.node, t.est = append(t.at, e.at), append(t.node, a.Node), append(t.est, est)
		addRow(t.amt[k*t.r:(k+1)*t.r], a.Request, 1)
	}
	return t
}

// Nodes returns the number of nodes.
func (t *Timeline) Nodes() int { return t.n }

// Resources returns the number of resources per node.
func (t *Timeline) Resources() int { return t.r }

// Releases returns the number of release events (pods whose room comes
// back at a declared or estimated time).
func (t *Timeline) Releases() int { return len(t.at) }

// Add records a pod that started: its request leaves the node's free room
// now and comes back at its release. O(log E) to find the place, plus one
// memmove of the events after it (E x ~20 bytes at worst, tens of
// microseconds for 50,000 pods); nothing else is recomputed.
func (t *Timeline) Add(a Alloc) {
	if !t.valid(a.Node) {
		return
	}
	addRow(t.free[int(a.Node)*t.r:(int(a.Node)+1)*t.r], a.Request, -1)
	at, est, ok := a.release()
	if !ok {
		return
	}
	i, _ := slices.BinarySearch(t.at, at+1) // after the events at the same time
	t.at = slices.Insert(t.at, i, at)
	t.node = slices.Insert(t.node, i, a.Node)
	t.est = slices.Insert(t.est, i, est)
	t.amt = slices.Insert(t.amt, i*t.r, make([]int64, t.r)...)
	addRow(t.amt[i*t.r:(i+1)*t.r], a.Request, 1)
}

// Remove records that a pod Added (or given to NewTimeline) ended: its
// request comes back to the node's free room and its release event goes.
// a must equal what was added (node, request, End, EstimatedEnd); it
// reports false, changing nothing, when no such release exists. To change a
// pod's estimate, Remove the old Alloc and Add the new one. Same cost as Add.
func (t *Timeline) Remove(a Alloc) bool {
	if !t.valid(a.Node) {
		return false
	}
	if at, est, ok := a.release(); ok {
		i, _ := slices.BinarySearch(t.at, at)
		for ; i < len(t.at) && t.at[i] == at; i++ {
			if t.node[i] == a.Node && t.est[i] == est && sameRow(t.amt[i*t.r:(i+1)*t.r], a.Request) {
				break
			}
		}
		if i == len(t.at) || t.at[i] != at {
			return false
		}
		t.at = slices.Delete(t.at, i, i+1)
		t.node = slices.Delete(t.node, i, i+1)
		t.est = slices.Delete(t.est, i, i+1)
		t.amt = slices.Delete(t.amt, i*t.r, (i+1)*t.r)
	}
	addRow(t.free[int(a.Node)*t.r:(int(a.Node)+1)*t.r], a.Request, 1)
	return true
}

// SetFree replaces node's free room now (its allocatable changed, or room
// taken by pods the timeline does not track did), O(resources).
func (t *Timeline) SetFree(node int, free []int64) {
	if !t.valid(int32(node)) {
		return
	}
	row, c := t.free[node*t.r:(node+1)*t.r], t.capacity[node*t.r:(node+1)*t.r]
	for j := range row {
		v := int64(0)
		if j < len(free) {
			v = free[j]
		}
		c[j] += v - row[j]
		row[j] = v
	}
}

func (t *Timeline) valid(n int32) bool { return n >= 0 && int(n) < t.n }

// addRow adds sign x req to row, ignoring amounts past the row's end.
func addRow(row, req []int64, sign int64) {
	for j, v := range req {
		if j < len(row) {
			row[j] += sign * v
		}
	}
}

// sameRow reports whether row equals req padded with zeros.
func sameRow(row, req []int64) bool {
	for j, v := range row {
		if (j < len(req) && req[j] != v) || (j >= len(req) && v != 0) {
			return false
		}
	}
	return true
}

// With returns a copy of t whose free room now is free (laid out as
// NewTimeline's) and whose releases are t's and extra's: extra are running
// pods the long-lived timeline does not track (for example pods without a
// limit, given an EstimatedEnd), whose requests are already out of free.
// t is unchanged. O(E + k log k) for t's E releases and k extra, so a
// caller may lay estimated ends over the timeline it keeps current without
// sorting it again.
func (t *Timeline) With(free []int64, extra []Alloc) *Timeline {
	room := make([]int64, t.n*t.r) // free padded or cut to t's nodes
	copy(room, free)
	x := NewTimeline(t.r, room, extra)
	// capacity: free now plus every tracked pod's request; t's are known
	// only as t.capacity - t.free.
	for i := range x.capacity {
		x.capacity[i] += t.capacity[i] - t.free[i]
	}
	out := &Timeline{r: t.r, n: t.n, free: x.free, capacity: x.capacity}
	k := len(t.at) + len(x.at)
	out.at, out.node, out.est = make([]int64, 0, k), make([]int32, 0, k), make([]bool, 0, k)
	out.amt = make([]int64, 0, k*t.r)
	i, j := 0, 0
	for i < len(t.at) || j < len(x.at) {
		src, s := t, i
		if i == len(t.at) || j < len(x.at) && x.at[j] < t.at[i] {
			src, s = x, j
			j++
		} else {
			i++
		}
		out.at, out.node, out.est = append(out.at, src.at[s]), append(out.node, src.node[s]), append(out.est, src.est[s])
		out.amt = append(out.amt, src.amt[s*t.r:(s+1)*t.r]...)
	}
	return out
}
