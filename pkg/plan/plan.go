package plan

import (
	"errors"
	"slices"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// Gang is a group to reserve for: the members that must start together.
type Gang struct {
	// Key names the gang in the Reservation (the caller's key).
	Key string
	// Classes are the minMember members to place together: request, count
	// and eligible nodes per class, as pkg/placement takes them (Start is
	// ignored: room over time is not monotone).
	Classes []placement.Class
	// Limit is the gang's own run-time limit in seconds, from its start:
	// how long its reservation holds its room. <= 0 or Unbounded means no
	// limit: the reservation holds its room for ever.
	Limit int64
	// Keep is the placement the gang's reservation had in the last plan
	// (its Steps) and KeepAt that reservation's start: when the search
	// finds no earlier start, the gang keeps that placement at KeepAt if
	// it still fits there (keep.go). Empty: none.
	Keep   []placement.Step
	KeepAt int64
}

// Reservation is where and when a gang will start: the earliest release
// time at which its members fit together without touching room an earlier
// reservation holds.
type Reservation struct {
	// Key is the Gang's.
	Key string
	// Start is when the gang can start (now when it fits now: then the
	// caller admits it, and the reservation keeps its room from backfill).
	Start int64
	// End is Start plus the gang's limit, Unbounded without one: the room
	// is held over [Start, End).
	End int64
	// Steps place each member (Class indexes the Gang's Classes).
	Steps []placement.Step
	// Guaranteed is true when Start depends on no estimated end: every pod
	// whose release it waits for has a declared limit, and so has every
	// earlier reservation it shares a node with. Otherwise Start is an
	// estimate that may slip (a bound only as good as EstimatedEnd).
	Guaranteed bool
}

// Errors Reserve returns.
var (
	// ErrDepth: the plan already holds its maximum number of
	// reservations. The bound keeps a pass's cost in check, and the
	// reservations far down the queues would be re-planned before they
	// start anyway.
	ErrDepth = errors.New("plan: reservation depth reached")
	// ErrNeverFits: the gang fits at no time: larger than the room left
	// once every pod with a release has ended and every reservation with
	// an end is over.
	ErrNeverFits = errors.New("plan: the gang fits at no time")
)

// resv is what a reservation holds: need[lo:hi] (nodes needNode, amounts
// needAmt) over [start, end).
type resv struct {
	start, end int64
	lo, hi     int
}

// ovEvent is the release of a job committed by this plan (the overlay on
// the Timeline, which a Plan never changes).
type ovEvent struct {
	at   int64
	node int32
	off  int32 // into ovAmt
}

// Plan is one admission pass's plan over time: the reservations made for
// queue heads, in queue order, and the backfill jobs committed around
// them. Build it with New (or Reset one to reuse its buffers) from a
// Timeline that then must not change until the pass ends. Not safe for
// concurrent use.
type Plan struct {
	tl       *Timeline
	now      int64
	maxRes   int
	r, n, nr int
	scale    []float64 // per resource: the largest node capacity, to size classes

	// Checkpoints: snapshot k (snap[k*nr:(k+1)*nr]) is the free room after
	// the releases tl.at[:cpIdx[k]] and the commits' overlay, at time
	// cpAt[k]; snapshot 0 is the free room now.
	cpIdx  []int
	cpAt   []int64
	snap   []int64
	estMin []int64    // per node: earliest estimated release, Unbounded if none
	theta  []int64    // backfill tree thresholds
	trees  []freeTree // per threshold: see resetTrees

	ov    []ovEvent
	ovAmt []int64

	res      []Reservation
	rs       []resv
	byStart  []int32 // reservation indexes by start (stable)
	byEnd    []int32 // reservation indexes by end (stable)
	needNode []int32
	needAmt  []int64

	// Backfill constraints, per node a linked list: entry e says that from
	// cStart[e] on the node may lend at most cSlack[e*r:(e+1)*r] to a job
	// still running then.
	head   []int32
	cNext  []int32
	cStart []int64
	cSlack []int64

	// Scratch.
	room   []int64
	kept   []int64 // keeps' room, apart from the search's
	placer placement.Placer
	one    [1]placement.Class
	rm     placement.Room
	steps  []placement.Step
	order  []int
	fc     []int
	elig   []bool
	active []bool
	mark   []int32
	taken  []int64
	u      []int64
}

// New returns the plan of a pass at time now over tl, holding at most
// maxReservations reservations. O(E x resources + K x nodes x resources)
// for E releases and K <= 64 checkpoints (one every max(nodes x resources,
// 256) releases): the only per-pass work that grows with the running pods.
func New(tl *Timeline, now int64, maxReservations int) *Plan {
	p := &Plan{}
	p.Reset(tl, now, maxReservations)
	return p
}

// Reset makes p a new plan, as New would, reusing p's buffers.
func (p *Plan) Reset(tl *Timeline, now int64, maxReservations int) {
	p.tl, p.now, p.maxRes = tl, now, maxReservations
	p.r, p.n, p.nr = tl.r, tl.n, tl.n*tl.r
	p.ov, p.ovAmt = p.ov[:0], p.ovAmt[:0]
	p.res, p.rs, p.needNode, p.needAmt = nil, p.rs[:0], p.needNode[:0], p.needAmt[:0]
	p.byStart, p.byEnd = p.byStart[:0], p.byEnd[:0]
	p.cNext, p.cStart, p.cSlack = p.cNext[:0], p.cStart[:0], p.cSlack[:0]
	p.head = fill(p.head, p.n, -1)
	p.mark = fill(p.mark, p.n, -1)
	p.estMin = fill(p.estMin, p.n, Unbounded)
	p.taken = fill(p.taken, p.nr, 0)
	p.room = fill(p.room, p.nr, 0)
	p.kept = fill(p.kept, p.nr, 0)
	p.u = fill(p.u, p.r, 0)
	p.scale = fill(p.scale, p.r, 1)
	for i := range p.n {
		for j := range p.r {
			p.scale[j] = max(p.scale[j], float64(tl.capacity[i*p.r+j]))
		}
	}
	p.rm = placement.Room{R: p.r, Free: p.room}
	p.buildCheckpoints()
	p.resetTrees()
}

// buildCheckpoints sweeps the releases once, copying the room at K+1
// points, so a reservation starts its own sweep at the checkpoint just
// before its earliest possible start instead of at now.
func (p *Plan) buildCheckpoints() {
	tl, e := p.tl, len(p.tl.at)
	k := 0
	if e > 0 {
		k = min(max(e/max(p.nr, 256), 1), 64)
	}
	p.cpIdx, p.cpAt = append(p.cpIdx[:0], 0), append(p.cpAt[:0], p.now)
	for c := 1; c <= k; c++ {
		i := c * e / k
		for i < e && i > 0 && p.when(i) == p.when(i-1) {
			i++
		}
		if i > p.cpIdx[len(p.cpIdx)-1] {
			p.cpIdx, p.cpAt = append(p.cpIdx, i), append(p.cpAt, p.when(i-1))
		}
	}
	p.snap = fill(p.snap, len(p.cpIdx)*p.nr, 0)
	copy(p.snap, tl.free)
	copy(p.room, tl.free)
	i := 0
	for c := 1; c < len(p.cpIdx); c++ {
		for ; i < p.cpIdx[c]; i++ {
			n := int(tl.node[i])
			addRow(p.room[n*p.r:(n+1)*p.r], tl.amt[i*p.r:(i+1)*p.r], 1)
			if tl.est[i] {
				p.estMin[n] = min(p.estMin[n], p.when(i))
			}
		}
		copy(p.snap[c*p.nr:], p.room)
	}
}

// when is release i's time for planning: a pod past its limit still holds
// its room now, so it is expected right after now, not at now.
func (p *Plan) when(i int) int64 { return max(p.tl.at[i], p.now+1) }

// Now returns the plan's time.
func (p *Plan) Now() int64 { return p.now }

// Reservations returns the reservations made so far, in order (read-only).
func (p *Plan) Reservations() []Reservation { return p.res }

// Reserve finds the earliest time at which g's members can be placed
// together on the room free then (now, or a release: a pod's end, a
// committed job's end, or the end of a reservation in the way), minus the
// room earlier reservations hold over any part of [t, t+g.Limit), and holds
// that placement. Call it for queue heads in queue order: earlier
// reservations win. The fit at each candidate time is pkg/placement's
// first-fit-decreasing, one class at a time in a fixed order (so less room
// elsewhere never moves a placement), and it runs only when every class
// has room for its count; a sweep keeps those counts per class in O(1)
// per release. Worst case O(releases x classes x nodes); typically a
// binary search over checkpoints, a few O(nodes) bucket checks and one
// sweep of E/K releases (see the package documentation).
func (p *Plan) Reserve(g Gang) (Reservation, error) {
	if len(p.res) >= p.maxRes {
		return Reservation{}, ErrDepth
	}
	p.prepare(g.Classes)
	defer p.unprepare(g.Classes)
	lim := limitOf(g.Limit)
	at, ok := p.search(g.Classes, lim, p.lowerBound(g.Classes))
	if (!ok || at >= g.KeepAt) && p.keeps(g, lim) {
		return p.record(g, g.KeepAt, satAdd(g.KeepAt, lim)), nil
	}
	if !ok {
		return Reservation{}, ErrNeverFits
	}
	return p.record(g, at, satAdd(at, lim)), nil
}

// record turns the placement in p.steps at time at into a reservation:
// its per-node needs, its backfill constraints and whether it is
// guaranteed. p.room still holds the placement and the active holds.
func (p *Plan) record(g Gang, at, end int64) Reservation {
	lo := len(p.needNode)
	for _, s := range p.steps {
		n := s.Node
		if p.mark[n] < 0 {
			p.mark[n] = int32(len(p.needNode))
			p.needNode = append(p.needNode, n)
			p.needAmt = append(p.needAmt, make([]int64, p.r)...)
		}
		m := int(p.mark[n])
		addRow(p.needAmt[m*p.r:(m+1)*p.r], g.Classes[s.Class].Request, 1)
	}
	hi := len(p.needNode)
	guaranteed := p.guaranteed(at, end, lo, hi)
	for _, n := range p.needNode[lo:] {
		p.mark[n] = -1
	}
	// A node's slack at the start, with this placement and the holds
	// overlapping it taken out, is what a job still running then may use
	// of it. Only the reservation's own nodes get a constraint: on another
	// node m a job only has to respect the reservations that hold m, and
	// the latest of those active at any time carries the constraint for
	// all of them (they overlap it, so its slack counts them).
	p.constrain(at, p.needNode[lo:hi])
	for _, n := range p.needNode[lo:] {
		p.mark[n] = -1
	}
	j := int32(len(p.rs))
	p.rs = append(p.rs, resv{start: at, end: end, lo: lo, hi: hi})
	i, _ := slices.BinarySearchFunc(p.byStart, at+1, func(j int32, t int64) int { return cmpInt(p.rs[j].start, t) })
	p.byStart = slices.Insert(p.byStart, i, j)
	i, _ = slices.BinarySearchFunc(p.byEnd, satAdd(end, 1), func(j int32, t int64) int { return cmpInt(p.rs[j].end, t) })
	p.byEnd = slices.Insert(p.byEnd, i, j)
	r := Reservation{Key: g.Key, Start: at, End: end, Steps: slices.Clone(p.steps), Guaranteed: guaranteed}
	p.res = append(p.res, r)
	return r
}

// guaranteed: no estimated release on the reservation's nodes by its start,
// and no estimated reservation sharing a node that starts before its end
// (it may slip into it). Own nodes are marked in p.mark.
func (p *Plan) guaranteed(at, end int64, lo, hi int) bool {
	for _, n := range p.needNode[lo:hi] {
		if p.estMin[n] <= at {
			return false
		}
	}
	for j, r := range p.rs {
		if p.res[j].Guaranteed || r.start >= end {
			continue
		}
		for _, n := range p.needNode[r.lo:r.hi] {
			if p.mark[n] >= 0 {
				return false
			}
		}
	}
	return true
}

// constrain adds, once per node (p.mark), the entry "from at, lend at
// most the node's room in p.room" to each of nodes.
func (p *Plan) constrain(at int64, nodes []int32) {
	for _, n := range nodes {
		if p.mark[n] >= 0 {
			continue
		}
		p.mark[n] = 0
		e := int32(len(p.cStart))
		p.cStart = append(p.cStart, at)
		p.cNext = append(p.cNext, p.head[n])
		p.cSlack = append(p.cSlack, p.room[int(n)*p.r:(int(n)+1)*p.r]...)
		p.head[n] = e
		p.refresh(int(n), at)
	}
}

// limitOf maps a limit to a positive duration or Unbounded.
func limitOf(l int64) int64 {
	if l <= 0 {
		return Unbounded
	}
	return l
}

// endOf is when a job started now with limit l ends.
func (p *Plan) endOf(l int64) int64 { return satAdd(p.now, limitOf(l)) }

// satAdd is a+d for d >= 1, Unbounded when d is or the sum overflows.
func satAdd(a, d int64) int64 {
	if d == Unbounded || a > Unbounded-d {
		return Unbounded
	}
	return a + d
}

// fill returns s resized to n with every element v.
func fill[T any](s []T, n int, v T) []T {
	s = slices.Grow(s[:0], n)[:n]
	for i := range s {
		s[i] = v
	}
	return s
}
