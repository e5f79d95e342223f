package queue

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Defaults of Options' zero values.
const (
	// DefaultStarvationThreshold is how long a group may wait at the head of
	// its queue before it reserves the queue.
	DefaultStarvationThreshold = 300 * time.Second
	// DefaultLookahead is how many refused groups one pass looks past in a queue.
	DefaultLookahead = 16
)

// Cluster is what the cluster-wide admission check (checkClusterRoom,
// CheckCluster) reads.
type Cluster struct {
	// Allocatable sums the nodes' allocatable resources.
	Allocatable resources.List
	// Used is what pods on nodes hold, Caldera's or not.
	Used resources.List
	// PlansWaiting counts the groups admitted on a plan's room (OnPlan) in
	// earlier passes that still reserve room: their plans have not yet
	// made it. Lending waits for them (lend.go).
	PlansWaiting int
}

// scale multiplies an amount by f >= 1, rounding down and saturating.
func scale(v int64, f float64) int64 {
	if f == 1 || v <= 0 {
		return v
	}
	x := float64(v) * f
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return max(int64(x), v)
}

// fits reports whether used + v <= limit, for non-negative used and limit.
func fits(used, v, limit int64) bool { return used <= limit && v <= limit-used }

// Outcome is the decision about one group in a pass.
type Outcome struct {
	// Group is the group as last Set.
	Group Group
	// Decision is what the pass decided about it.
	Decision Decision
}

// QueueOutcome summarizes a pass in one queue with ready groups.
type QueueOutcome struct {
	// Queue names the queue.
	Queue string
	// Stop says why the pass stopped in the queue while groups remained
	// unexamined: CheckQueueMissing/Broken/Closed, CheckReserved or
	// CheckWaiting; CheckNone when it examined every ready group.
	Stop Decision
	// Admitted and Refused count the groups the pass admitted and refused;
	// Waiting counts the ready groups it did not reach.
	Admitted, Refused, Waiting int
}

// Result is what one admission pass decided. It is owned by the Pending and
// valid until the next Admit.
type Result struct {
	// Admitted lists the admitted groups in admission order. They have left the
	// Pending; the caller records them as admitted and adds their requests to
	// their queues' Usage.Inflight.
	Admitted []Outcome
	// Refused lists the groups the pass examined and refused.
	Refused []Outcome
	// Queues has one entry per queue with ready groups.
	Queues []QueueOutcome
}

// verdict is the kind of an evaluation's outcome, or of one check's: admit
// also means a check passed.
type verdict uint8

const (
	// admit: admitted, or, from one check, passed.
	admit verdict = iota
	// transient: refused for room (by the capability, fair-share, cluster
	// or placement check); may pass when work finishes.
	transient
	// permanent: the request alone exceeds a limit.
	permanent
	// personal: refused for the group's own reason (quota); such a group
	// is not its queue's head.
	personal
)

// passState is the scratch space of Admit, kept between passes to avoid
// allocating.
type passState struct {
	s       *Shares   // the pass's shares
	o       Options   // the pass's options, defaults applied
	now     time.Time // the pass's time, for the starvation guard
	gen     uint64    // the pass's number (Pending.gen)
	r       int       // resource names in the Pending
	parent  []int
	hasKids []bool
	toS     []int // Pending resource -> Shares resource, -1 when absent
	// The Shares' amounts per tree node, r each at node*r, by the
	// Pending's resource positions (prepare); infl and selfIn grow with
	// each admission of the pass.
	realCap  []int64
	deserved []int64
	selfDes  []int64
	alloc    []int64
	infl     []int64
	selfAl   []int64
	selfIn   []int64
	ceil     []int64 // cluster: allocatable x overcommit
	reclaim  []int64 // cluster: what reclaimable queues hold above deserved
	// roomWanted: a group that passed the fair-share check was refused by
	// the cluster check, or, without counting reclaim's room (the head
	// exception, or its window of free room only), by the placement check
	// in this pass; no room is lent while it waits (lend.go). waived: the
	// last evaluateWith took the head exception of the fair-share check.
	roomWanted, waived bool
	plansWaiting       int     // Cluster.PlansWaiting
	cused              []int64 // cluster: used + every queue's inflight
	scratch            []int64
	pre                []int64 // what preemption frees for the group being evaluated
	excess             []int64 // per queue: what its own groups hold above what they keep (reclaimable)
	subEx              []int64 // per queue: excess summed over its subtree
	freeable           []int64 // per level of the group being evaluated: what reclaim frees there
	qheap              []*pqueue
	touched            []*pqueue
	res                Result
}

// Admit runs one admission pass (Volcano's enqueue action) over the ready
// groups and returns what it decided. s must come from Divide over the same
// queues; c describes the cluster; now drives the starvation guard.
//
// Queues are visited by priority (higher first), then by the share of their
// own groups counting what the pass has admitted so far ((allocated +
// inflight) / deserved, lower first), then by name; each visit admits at most
// one group and re-inserts the queue by its new share, so queues of equal
// priority take turns and a queue that just got a large group waits for the
// others to catch up. Within a queue, groups go by priority, creation time
// and key. A group is admitted when it passes, in order: its queue exists,
// is healthy and open (checkQueueOpen); for its queue and every ancestor,
// allocated + inflight + request <= real capability (checkCapability); for
// the queue's own share (when it has children), the queue and every
// ancestor, allocated + inflight + request <= deserved, except at a level
// whose deserved the request alone exceeds when the group is at the head of
// its queue (checkFairShare); for every resource it requests, cluster used +
// inflight + request <= allocatable x overcommit (checkClusterRoom); with
// Options.Placement, its members fit on the nodes (checkPlacement); the
// Quota callback (checkQuota). Groups without enough members
// (CheckMembers) stay out of the pass altogether. Each admission adds the
// request to the inflight of the queue, its ancestors and the cluster before
// the next decision, in this pass and in s.
//
// A refused group does not stop its queue: the pass looks past up to
// Lookahead refused groups per queue, so smaller groups can be admitted around
// a large one. Only the head (the first group refused for room: by the
// capability, fair-share, cluster or placement check) can use the head
// exception and trigger the starvation guard: once it has been at the head
// for StarvationThreshold, the queue admits nothing behind it. A group
// whose request alone exceeds a real capability or the cluster is set aside
// (and reported) until those limits rise, so it neither blocks nor reserves
// its queue. The pass costs O((a + q x Lookahead) x (log n + r x d) + q x r)
// for a admissions, q queues, n groups per queue, r resources and tree depth
// d: it touches the queues' heads, not every pending group.
func (p *Pending) Admit(s *Shares, c Cluster, o Options, now time.Time) *Result {
	if s == nil {
		s = Divide(nil, c.Allocatable, nil)
	}
	p.beginPass(s, c, o, now)
	for _, q := range p.queues {
		p.enterQueue(q)
	}
	p.takeTurns()
	p.lend()
	ps := &p.pass
	for _, q := range ps.touched {
		p.closeQueue(q)
	}
	slices.SortFunc(ps.res.Queues, func(a, b QueueOutcome) int { return strings.Compare(a.Queue, b.Queue) })
	ps.s = nil
	return &ps.res
}

// beginPass resets the pass's state and result for a pass over s and lays
// out its amounts (prepare).
func (p *Pending) beginPass(s *Shares, c Cluster, o Options, now time.Time) {
	p.gen++
	ps := &p.pass
	ps.s, ps.o, ps.now, ps.gen = s, o.withDefaults(), now, p.gen
	ps.roomWanted = false
	ps.plansWaiting = c.PlansWaiting

	ps.res.Admitted = ps.res.Admitted[:0]
	ps.res.Refused = ps.res.Refused[:0]
	ps.res.Queues = ps.res.Queues[:0]
	p.prepare(c)

	ps.qheap = ps.qheap[:0]
	ps.touched = ps.touched[:0]
}

// enterQueue readies q for the pass: it resets q's per-pass state, stops q
// when checkQueueOpen refuses it, puts parked groups back when their limits
// rose, and gives q a turn when it has ready groups.
func (p *Pending) enterQueue(q *pqueue) {
	ps := &p.pass
	q.skip = q.skip[:0]
	q.refused, q.admitted, q.ahead, q.done, q.wants, q.holds = 0, 0, nil, false, false, 0
	q.budget = ps.o.Lookahead
	q.node = -1
	if len(q.heap) == 0 && len(q.parked) == 0 {
		return // only groups waiting for members
	}
	node, d, ok := p.checkQueueOpen(q)
	if !ok {
		p.stopQueue(q, d)
		return
	}
	q.node, q.prio = node, ps.s.tree.specs[node].Priority
	ps.touched = append(ps.touched, q)
	if len(q.parked) > 0 {
		p.maybeUnpark(q)
	}
	if len(q.heap) > 0 {
		q.dyn = p.dynShare(q)
		p.qpush(q)
	}
}

// takeTurns gives the queues their turns, lowest share first, until every
// queue has stopped: each turn admits at most one group (attempt) and puts
// the queue back by its new share.
func (p *Pending) takeTurns() {
	ps := &p.pass
	for len(ps.qheap) > 0 {
		q := ps.qheap[0]
		if p.attempt(q) && !q.done && len(q.heap) > 0 {
			q.dyn = p.dynShare(q)
			p.qdown(0)
		} else {
			p.qremove(0)
		}
	}
}

// closeQueue ends the pass in q: refused groups go back into its heap, and
// the result records why the queue stopped with groups unexamined, and its
// counts.
func (p *Pending) closeQueue(q *pqueue) {
	ps := &p.pass
	waiting := len(q.heap)
	for _, e := range q.skip {
		q.push(e)
	}
	q.skip = q.skip[:0]
	stop := Decision{Queue: q.name}
	switch {
	case q.stopGen == ps.gen:
		stop = q.stop
	case waiting > 0:
		stop = Decision{Check: CheckWaiting, Queue: q.name, Refused: q.refused}
		if q.ahead != nil {
			stop.Behind = q.ahead.g.Key
		}
		q.stop, q.stopGen = stop, ps.gen
	}
	ps.res.Queues = append(ps.res.Queues, QueueOutcome{
		Queue: q.name, Stop: stop, Admitted: q.admitted, Refused: q.refused, Waiting: waiting,
	})
	q.ahead = nil
	if q.groups == 0 {
		delete(p.queues, q.name)
	}
}

// stopQueue records a queue-wide refusal for every ready group of q.
func (p *Pending) stopQueue(q *pqueue, d Decision) {
	q.stop, q.stopGen = d, p.gen
	p.pass.res.Queues = append(p.pass.res.Queues, QueueOutcome{
		Queue: q.name, Stop: d, Waiting: len(q.heap) + len(q.parked),
	})
}

// ceiling fills ps.scratch with the most q's groups could ever get: per
// resource, the least of the cluster's overcommitted allocatable and the real
// capabilities of q and its ancestors.
func (p *Pending) ceiling(q *pqueue) []int64 {
	ps := &p.pass
	r := ps.r
	ps.scratch = growInt64s(ps.scratch, r)
	copy(ps.scratch, ps.ceil)
	for l := q.node; l >= 0; l = ps.parent[l] {
		for j := range r {
			ps.scratch[j] = min(ps.scratch[j], ps.realCap[l*r+j])
		}
	}
	return ps.scratch
}

// maybeUnpark puts q's parked groups back into its heap when the ceiling their
// requests exceeded has risen anywhere since they were parked.
func (p *Pending) maybeUnpark(q *pqueue) {
	ceil := p.ceiling(q)
	rose := false
	for j, v := range ceil {
		if j >= len(q.parkedCeil) || v > q.parkedCeil[j] {
			rose = true
			break
		}
	}
	if !rose {
		copy(q.parkedCeil, ceil)
		return
	}
	for _, e := range q.parked {
		q.push(e)
	}
	clear(q.parked)
	q.parked = q.parked[:0]
}

// dynShare is the share of q's own groups counting what is admitted so far.
func (p *Pending) dynShare(q *pqueue) float64 {
	ps := &p.pass
	b := q.node * ps.r
	return shareOf(ps.selfAl[b:b+ps.r], ps.selfIn[b:b+ps.r], ps.selfDes[b:b+ps.r])
}

// attempt examines q's groups from the head until it admits one (true), or
// the queue stops for this pass: no group left, lookahead used up, or the
// starvation guard.
func (p *Pending) attempt(q *pqueue) bool {
	ps := &p.pass
	for len(q.heap) > 0 {
		e := q.pop()
		head := q.ahead == nil
		d, v := p.evaluate(e, q, head)
		e.gen = ps.gen
		if v == admit {
			if pl := ps.o.Placement; pl != nil {
				pl.Commit(e.g)
			}
			p.apply(e, q)
			if head {
				q.headKey = Key{}
			}
			q.admitted++
			ps.res.Admitted = append(ps.res.Admitted, Outcome{Group: e.g, Decision: d})
			return true
		}
		e.decision = d
		q.refused++
		ps.res.Refused = append(ps.res.Refused, Outcome{Group: e.g, Decision: d})
		switch v {
		case permanent:
			if len(q.parked) == 0 {
				q.parkedCeil = growInt64s(q.parkedCeil, ps.r)
				copy(q.parkedCeil, p.ceiling(q))
			}
			q.park(e)
		default:
			e.where = skipped
			q.skip = append(q.skip, e)
		}
		reserved := v == transient && p.hold(q, e, d)
		if v == transient && head && p.guardHead(q, e, d.Check, reserved) {
			return false
		}
		if q.refused > q.budget {
			q.done = true
			return false
		}
	}
	q.done = true
	return false
}

// hold asks a Placement that is also a Planner to reserve for e, refused
// for room in q (a refusal more room would cure), while q has reservations
// left in this pass (Options.ReservationsPerQueue). Groups refused for their
// queue's share or capability hold nothing: room others release would not
// start them (waitsForReleases).
func (p *Pending) hold(q *pqueue, e *entry, d Decision) (reserved bool) {
	ps := &p.pass
	pn, ok := ps.o.Placement.(Planner)
	if !ok || q.holds >= ps.o.ReservationsPerQueue || !p.waitsForReleases(d) {
		return false
	}
	q.holds++
	return pn.Hold(e.g)
}

// waitsForReleases reports whether room running pods give back would start
// the group d refuses, so that a reservation over time means something: a
// refusal for room (Decision.WaitsForRoom), but not a capability that
// guarantees to other queues carve below the cluster's total. Such a
// capability is lifted only by the queue's own pods ending or new nodes,
// not by room others release: a reservation planned on released room finds
// the members placeable "now" at every pass, and its start slides with the
// clock. Uncarved, the capability is the cluster's own size, and the room
// the plan waits for is what lifts it. O(1).
func (p *Pending) waitsForReleases(d Decision) bool {
	if !d.WaitsForRoom() {
		return false
	}
	if d.Check != CheckCapability {
		return true
	}
	ps := &p.pass
	l, ok := ps.s.tree.index[d.Queue]
	j, known := p.rindex[d.Resource]
	if !ok || !known {
		return false
	}
	sj := ps.toS[j]
	return sj >= 0 && ps.realCap[l*ps.r+int(j)] >= ps.s.total[sj]
}

// guardHead makes e, refused for room at the head of q, q's head: its
// starvation clock starts when it is new there. Once it has waited
// StarvationThreshold, the guard reserves q for it (CheckReserved) and
// guardHead reports true: q admits nothing more in the pass. reserved says
// whether e holds a reservation over time (Planner.Hold): that reservation
// is its guard, since nothing that would delay its start is admitted, from
// any queue; the guard then neither stops q (work behind e that ends in
// time still starts) nor holds empty nodes.
func (p *Pending) guardHead(q *pqueue, e *entry, check Check, reserved bool) bool {
	ps := &p.pass
	q.ahead = e
	if q.headKey != e.g.Key {
		q.headKey, q.headSince = e.g.Key, ps.now
	}
	if th := ps.o.StarvationThreshold; th < 0 || ps.now.Sub(q.headSince) < th || reserved {
		return false
	}
	// A head refused only because its members cannot be placed reserves
	// its queue, and the room it needs, only when it could be placed on
	// the cluster's empty nodes; otherwise holding anything for it would
	// hold it for nothing.
	if check == CheckPlacement && !ps.o.Placement.Reserve(e.g) {
		return false
	}
	q.stop = Decision{Check: CheckReserved, Queue: q.name, Behind: e.g.Key, Since: q.headSince}
	q.stopGen = ps.gen
	q.done = true
	return true
}

// evaluate runs the group checks for e, a ready group of the healthy open
// queue q; head says whether no group ahead of it in q was refused for room
// (a transient verdict). A group refused for room is evaluated again
// counting what preemption of its queue's lower-priority groups would free,
// when Preemptible is set.
func (p *Pending) evaluate(e *entry, q *pqueue, head bool) (Decision, verdict) {
	ps := &p.pass
	ps.pre = growInt64s(ps.pre, ps.r)
	clear(ps.pre)
	d, v := p.evaluateWith(e, q, head)
	p.noteRoomWanted(e, q, d.Check, v)
	if v != transient || ps.o.Preemptible == nil || e.g.freeRoomOnly(ps.now) {
		return d, v
	}
	// Groups admitted earlier in the pass by counting preemption are in
	// the queue's inflight already, so the same room is not promised twice.
	if !p.countPreemptible(e, q) {
		return d, v
	}
	// Refused again, by placement: that is the reason the user can act on
	// (the aggregate checks passed with what preemption frees).
	if d2, v2 := p.evaluateWith(e, q, head); v2 == admit || v2 == personal || d2.Check == CheckPlacement || d2.Check == CheckReservation {
		return d2, v2
	}
	return d, v
}

// noteRoomWanted records, for lending (lend.go), a group refused for room by
// the cluster or placement check in the plain try. Its queue lends to none
// of its own groups; and when the cluster is short of room in sum, or the
// group could not count what reclaim takes back from a loan (it took the
// head exception, or is in its window of free room only), nothing is lent
// at all. The plain try's reason, not the preemption try's: a group above
// its share refused for placement with preemption's room is not waiting for
// idle room.
func (p *Pending) noteRoomWanted(e *entry, q *pqueue, check Check, v verdict) {
	ps := &p.pass
	if v != transient || (check != CheckCluster && check != CheckPlacement && check != CheckReservation) {
		return
	}
	q.wants = true
	if check == CheckCluster || ps.waived || e.g.freeRoomOnly(ps.now) {
		ps.roomWanted = true
	}
}

// countPreemptible fills ps.pre with what preemption of q's groups below
// e's priority frees (Options.Preemptible), by resource position, and
// reports whether it frees anything.
func (p *Pending) countPreemptible(e *entry, q *pqueue) bool {
	ps := &p.pass
	freed := false
	for k, amt := range ps.o.Preemptible(q.name, e.g.Priority) {
		if i, ok := p.rindex[k]; ok && amt > 0 {
			ps.pre[i], freed = amt, true
		}
	}
	return freed
}

// evaluateWith is evaluate's one try of the group checks (checks.go): with
// ps.pre counted as free in the queue, its ancestors and the cluster (the
// preemption try), or, with ps.pre empty, with what reclaim frees for a
// group entitled to it. It reports the first refusal, or the admission.
func (p *Pending) evaluateWith(e *entry, q *pqueue, head bool) (Decision, verdict) {
	ps := &p.pass
	ps.waived = false
	c := candidate{e: e, q: q, head: head}
	if v := p.checkRequestCanFit(&c); v != admit {
		return c.refused, v
	}
	p.countEvictionRoom(&c)
	if v := p.checkCapability(&c); v != admit {
		return c.refused, v
	}
	if v := p.checkFairShare(&c); v != admit {
		return c.refused, v
	}
	ps.waived = c.waived
	if v := p.checkClusterRoom(&c); v != admit {
		return c.refused, v
	}
	if v := p.checkPlacement(&c); v != admit {
		return c.refused, v
	}
	if v := p.checkQuota(&c); v != admit {
		return c.refused, v
	}
	return Decision{Admitted: true, HeadException: c.waived, Queue: q.name, OnPlan: c.onPlan}, admit
}

// apply admits e: its request joins the inflight of its queue, the queue's
// ancestors and the cluster, here and in the Shares; e leaves the Pending.
func (p *Pending) apply(e *entry, q *pqueue) {
	ps := &p.pass
	s := ps.s
	r, rs := ps.r, s.r
	for _, a := range e.req {
		sj := ps.toS[a.r]
		for l := q.node; l >= 0; l = ps.parent[l] {
			ps.infl[l*r+int(a.r)] = satAdd(ps.infl[l*r+int(a.r)], a.v)
			if sj >= 0 {
				s.inflight[l*rs+sj] = satAdd(s.inflight[l*rs+sj], a.v)
			}
		}
		ps.selfIn[q.node*r+int(a.r)] = satAdd(ps.selfIn[q.node*r+int(a.r)], a.v)
		ps.cused[a.r] = satAdd(ps.cused[a.r], a.v)
		if sj >= 0 {
			s.selfInflight[q.node*rs+sj] = satAdd(s.selfInflight[q.node*rs+sj], a.v)
			s.inflightAll[sj] = satAdd(s.inflightAll[sj], a.v)
		}
		q.pending[a.r] -= a.v
	}
	q.groups--
	e.q = nil
	delete(p.groups, e.g.Key)
}
