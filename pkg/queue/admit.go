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

// Cluster is the cluster-wide side of admission check 5.
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

// outcome kinds of evaluate.
type verdict uint8

const (
	admit     verdict = iota
	transient         // refused by checks 3-5: may pass when work finishes
	permanent         // the request alone exceeds a limit
	personal          // refused for the group's own reason (quota): not a head
)

// passState is the scratch space of Admit, kept between passes to avoid
// allocating.
type passState struct {
	s        *Shares
	o        Options
	now      time.Time
	gen      uint64
	r        int // resource names in the Pending
	parent   []int
	hasKids  []bool
	toS      []int // Pending resource -> Shares resource, -1 when absent
	realCap  []int64
	deserved []int64
	selfDes  []int64
	alloc    []int64
	infl     []int64
	selfAl   []int64
	selfIn   []int64
	ceil     []int64 // cluster: allocatable x overcommit
	reclaim  []int64 // cluster: what reclaimable queues hold above deserved
	// roomWanted: a group that passed check 4 was refused by check 5, or,
	// without counting reclaim's room (the head exception, or its window
	// of free room only), by check 7 in this pass; no room is lent while
	// it waits (lend.go). waived: the last evaluateWith waived check 4.
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
// and key. A group is admitted when it passes, in order: (2) its queue exists,
// is healthy and open; (3) for its queue and every ancestor, allocated +
// inflight + request <= real capability; (4) for the queue's own share (when
// it has children), the queue and every ancestor, allocated + inflight +
// request <= deserved, except at a level whose deserved the request alone
// exceeds when the group is at the head of its queue; (5) for every resource
// it requests, cluster used + inflight + request <= allocatable x overcommit;
// (6) the Quota callback. Check (1) keeps groups without enough members out of
// the pass altogether. Each admission adds the request to the inflight of the
// queue, its ancestors and the cluster before the next decision, in this pass
// and in s.
//
// A refused group does not stop its queue: the pass looks past up to
// Lookahead refused groups per queue, so smaller groups can be admitted around
// a large one. Only the head (the first group refused by checks 3-5) can use
// the head exception and trigger the starvation guard: once it has been at the
// head for StarvationThreshold, the queue admits nothing behind it. A group
// whose request alone exceeds a real capability or the cluster is set aside
// (and reported) until those limits rise, so it neither blocks nor reserves
// its queue. The pass costs O((a + q x Lookahead) x (log n + r x d) + q x r)
// for a admissions, q queues, n groups per queue, r resources and tree depth
// d: it touches the queues' heads, not every pending group.
func (p *Pending) Admit(s *Shares, c Cluster, o Options, now time.Time) *Result {
	if s == nil {
		s = Divide(nil, c.Allocatable, nil)
	}
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
	t := s.tree
	for _, q := range p.queues {
		q.skip = q.skip[:0]
		q.refused, q.admitted, q.ahead, q.done, q.wants = 0, 0, nil, false, false
		q.budget = ps.o.Lookahead
		q.node = -1
		if len(q.heap) == 0 && len(q.parked) == 0 {
			continue // only groups waiting for members
		}
		i, ok := t.index[q.name]
		switch {
		case !ok:
			p.stopQueue(q, Decision{Check: CheckQueueMissing, Queue: q.name})
			continue
		case t.problems[i] != nil:
			p.stopQueue(q, Decision{Check: CheckQueueBroken, Queue: q.name, Detail: t.problems[i].Message})
			continue
		case !t.specs[i].Open():
			p.stopQueue(q, Decision{Check: CheckQueueClosed, Queue: q.name})
			continue
		}
		q.node, q.prio = i, t.specs[i].Priority
		ps.touched = append(ps.touched, q)
		if len(q.parked) > 0 {
			p.maybeUnpark(q)
		}
		if len(q.heap) > 0 {
			q.dyn = p.dynShare(q)
			p.qpush(q)
		}
	}

	for len(ps.qheap) > 0 {
		q := ps.qheap[0]
		if p.attempt(q) && !q.done && len(q.heap) > 0 {
			q.dyn = p.dynShare(q)
			p.qdown(0)
		} else {
			p.qremove(0)
		}
	}

	p.lend()

	for _, q := range ps.touched {
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
	slices.SortFunc(ps.res.Queues, func(a, b QueueOutcome) int { return strings.Compare(a.Queue, b.Queue) })
	ps.s = nil
	return &ps.res
}

// stopQueue records a queue-wide refusal for every ready group of q.
func (p *Pending) stopQueue(q *pqueue, d Decision) {
	q.stop, q.stopGen = d, p.gen
	p.pass.res.Queues = append(p.pass.res.Queues, QueueOutcome{
		Queue: q.name, Stop: d, Waiting: len(q.heap) + len(q.parked),
	})
}

// prepare lays out the pass's per-queue and cluster amounts by the Pending's
// resource positions.
func (p *Pending) prepare(c Cluster) {
	ps := &p.pass
	s := ps.s
	for _, k := range s.names {
		p.resource(k)
	}
	for k := range c.Allocatable {
		p.resource(k)
	}
	r, rs := len(p.rnames), s.r
	n := len(s.tree.specs)
	ps.r = r
	ps.parent = s.tree.parent
	ps.hasKids = growBools(ps.hasKids, n)
	for i := range n {
		ps.hasKids[i] = len(s.tree.children[i]) > 0
	}
	ps.toS = growInts(ps.toS, r)
	for i := range ps.toS {
		ps.toS[i] = -1
	}
	for i, k := range s.names {
		ps.toS[p.rindex[k]] = i
	}
	copyIn := func(dst []int64, src []int64) []int64 {
		dst = growInt64s(dst, n*r)
		clear(dst)
		for _, i := range s.tree.order {
			for j, sj := range ps.toS {
				if sj >= 0 {
					dst[i*r+j] = src[i*rs+sj]
				}
			}
		}
		return dst
	}
	ps.realCap = copyIn(ps.realCap, s.realCap)
	ps.deserved = copyIn(ps.deserved, s.deserved)
	ps.selfDes = copyIn(ps.selfDes, s.selfDeserved)
	ps.alloc = copyIn(ps.alloc, s.alloc)
	ps.infl = copyIn(ps.infl, s.inflight)
	ps.selfAl = copyIn(ps.selfAl, s.selfAlloc)
	ps.selfIn = copyIn(ps.selfIn, s.selfInflight)

	ps.ceil = growInt64s(ps.ceil, r)
	ps.cused = growInt64s(ps.cused, r)
	clear(ps.ceil)
	clear(ps.cused)
	for k, v := range c.Allocatable {
		ps.ceil[p.rindex[k]] = scale(nn(v), ps.o.OvercommitFactor)
	}
	for k, v := range c.Used {
		if i, ok := p.rindex[k]; ok {
			ps.cused[i] = nn(v)
		}
	}
	for j, sj := range ps.toS {
		if sj >= 0 {
			ps.cused[j] = satAdd(ps.cused[j], s.inflightAll[sj])
		}
	}
	p.prepareReclaimable()
	ps.reclaim = growInt64s(ps.reclaim, r)
	clear(ps.reclaim)
	if ps.o.Reclaim {
		for i := range n {
			spec := s.tree.specs[i]
			if !spec.Reclaimable || s.tree.problems[i] != nil {
				continue
			}
			for j := range r {
				keep := max(ps.selfDes[i*r+j], nn(spec.Guarantee[p.rnames[j]]))
				if over := ps.selfAl[i*r+j] - keep; over > 0 {
					ps.reclaim[j] = satAdd(ps.reclaim[j], over)
				}
			}
		}
	}
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
		if v == transient && head {
			q.ahead = e
			if q.headKey != e.g.Key {
				q.headKey, q.headSince = e.g.Key, ps.now
			}
			// A head refused only because its members cannot be placed
			// reserves its queue, and the room it needs, only when it could
			// be placed on the cluster's empty nodes; otherwise holding
			// anything for it would hold it for nothing.
			if th := ps.o.StarvationThreshold; th >= 0 && ps.now.Sub(q.headSince) >= th &&
				(d.Check != CheckPlacement || ps.o.Placement.Reserve(e.g)) {
				q.stop = Decision{Check: CheckReserved, Queue: q.name, Behind: e.g.Key, Since: q.headSince}
				q.stopGen = ps.gen
				q.done = true
				return false
			}
		}
		if q.refused > q.budget {
			q.done = true
			return false
		}
	}
	q.done = true
	return false
}

// evaluate runs checks 3-6 for e, a ready group of the healthy open queue q;
// head says whether no group ahead of it in q was refused by checks 3-5.
// A group refused by checks 3-5 is evaluated again counting what preemption
// of its queue's lower-priority groups would free, when Preemptible is set.
func (p *Pending) evaluate(e *entry, q *pqueue, head bool) (Decision, verdict) {
	ps := &p.pass
	ps.pre = growInt64s(ps.pre, ps.r)
	clear(ps.pre)
	d, v := p.evaluateWith(e, q, head)
	// A group within its share refused for room (lend.go): its queue lends
	// to none of its own groups; and when the cluster is short of room in
	// sum, or the group could not count what reclaim takes back from a
	// loan, nothing is lent at all. The plain try's reason, not the
	// preemption try's: a group above its share refused for placement
	// with preemption's room is not waiting for idle room.
	if v == transient && (d.Check == CheckCluster || d.Check == CheckPlacement) {
		q.wants = true
		if d.Check == CheckCluster || ps.waived || e.g.freeRoomOnly(ps.now) {
			ps.roomWanted = true
		}
	}
	if v != transient || ps.o.Preemptible == nil || e.g.freeRoomOnly(ps.now) {
		return d, v
	}
	// Groups admitted earlier in the pass by counting preemption are in
	// the queue's inflight already, so the same room is not promised twice.
	freed := false
	for k, amt := range ps.o.Preemptible(q.name, e.g.Priority) {
		if i, ok := p.rindex[k]; ok && amt > 0 {
			ps.pre[i], freed = amt, true
		}
	}
	if !freed {
		return d, v
	}
	// Refused again, by placement: that is the reason the user can act on
	// (the aggregate checks passed with what preemption frees).
	if d2, v2 := p.evaluateWith(e, q, head); v2 == admit || v2 == personal || d2.Check == CheckPlacement {
		return d2, v2
	}
	return d, v
}

// evaluateWith is evaluate's one try: with ps.pre counted as free in the
// queue, its ancestors and the cluster (the preemption try), or, with ps.pre
// empty, with what reclaim frees for a group entitled to it.
func (p *Pending) evaluateWith(e *entry, q *pqueue, head bool) (Decision, verdict) {
	ps := &p.pass
	r := ps.r
	node := q.node
	ps.waived = false
	name := func(l int) string { return ps.s.tree.specs[l].Name }
	refuse := func(c Check, l int, a amount, avail int64, perm bool) (Decision, verdict) {
		d := Decision{Check: c, Queue: q.name, Resource: p.rnames[a.r], Request: a.v, Available: max(avail, 0), Permanent: perm}
		if l >= 0 {
			d.Queue = name(l)
		}
		if perm {
			return d, permanent
		}
		return d, transient
	}

	// A request that can never fit is reported as such, whatever else fails,
	// against the tightest limit and where it comes from: the cluster, or the
	// highest queue that sets it (real capabilities only shrink downwards).
	for _, a := range e.req {
		lim, at := ps.ceil[a.r], -1
		for l := node; l >= 0; l = ps.parent[l] {
			if c := ps.realCap[l*r+int(a.r)]; c < lim || (at >= 0 && c == lim) {
				lim, at = c, l
			}
		}
		if a.v > lim {
			if at < 0 {
				return refuse(CheckCluster, -1, a, lim, true)
			}
			return refuse(CheckCapability, at, a, lim, true)
		}
	}
	// (3) real capability of the queue and its ancestors. At an ancestor,
	// what reclaim can take back from queues off the group's path inside
	// the ancestor's subtree counts as room (fillFreeable): otherwise a
	// child starved under its parent's capability by a sibling above its
	// deserved share is never admitted, and reclaim never runs for it.
	// The preemption try (evaluate's second) counts no reclaim: CalderaReclaim
	// runs one plan or the other, so a group passing only with both would be
	// admitted and never placed, holding its queue's room meanwhile.
	preempting := slices.ContainsFunc(ps.pre, func(v int64) bool { return v > 0 })
	reclaimed := p.fillFreeable(e, node, !preempting)
	for l := node; l >= 0; l = ps.parent[l] {
		for _, a := range e.req {
			i := l*r + int(a.r)
			used := max(satAdd(ps.alloc[i], ps.infl[i])-ps.pre[a.r]-ps.freeable[i], 0)
			if !fits(used, a.v, ps.realCap[i]) {
				return refuse(CheckCapability, l, a, ps.realCap[i]-used, false)
			}
		}
	}
	// (4) deserved shares: the queue's own part, the queue, its ancestors.
	waived := false
	level := func(l int, des, al, in []int64, own bool) (Decision, bool) {
		b := l * r
		if head {
			for _, a := range e.req {
				if a.v > des[b+int(a.r)] {
					waived = true
					return Decision{}, true
				}
			}
		}
		for _, a := range e.req {
			if swap(ps.pre, a) {
				continue
			}
			i := b + int(a.r)
			used := satAdd(al[i], in[i]) - ps.pre[a.r]
			if !own {
				used -= ps.freeable[i]
			}
			used = max(used, 0)
			if !fits(used, a.v, des[i]) {
				d, _ := refuse(CheckFairness, l, a, des[i]-used, false)
				return d, false
			}
		}
		return Decision{}, true
	}
	if ps.hasKids[node] {
		if d, ok := level(node, ps.selfDes, ps.selfAl, ps.selfIn, true); !ok {
			return d, transient
		}
	}
	for l := node; l >= 0; l = ps.parent[l] {
		if d, ok := level(l, ps.deserved, ps.alloc, ps.infl, false); !ok {
			return d, transient
		}
	}
	ps.waived = waived
	// (5) cluster idle, on the requested resources only; a group within its
	// deserved share may also count what reclaim can take back, or, in the
	// preemption try, what preemption frees.
	plan := PlanNone
	if reclaimed {
		plan = PlanReclaim
	}
	freeOnly := e.g.freeRoomOnly(ps.now)
	// onPlan: the admission counts room only evictions free (Decision.OnPlan).
	onPlan := preempting || reclaimed
	for _, a := range e.req {
		lim := ps.ceil[a.r]
		onPlan = onPlan || !fits(ps.cused[a.r], a.v, lim)
		switch {
		case preempting:
			lim = satAdd(lim, ps.pre[a.r])
			if ps.pre[a.r] > 0 {
				plan = PlanPreempt
			}
		case !waived && !freeOnly:
			lim = satAdd(lim, ps.reclaim[a.r])
			if ps.reclaim[a.r] > 0 {
				plan = PlanReclaim
			}
		}
		if !fits(ps.cused[a.r], a.v, lim) {
			return refuse(CheckCluster, -1, a, lim-ps.cused[a.r], false)
		}
	}
	// (7, before 6: the quota callback counts what it answers yes to)
	// the members can be placed on the nodes' free room, or on the room
	// a plan the group is entitled to frees.
	if ps.o.Placement != nil {
		d, ok, needed := p.placeable(e, plan)
		if !ok {
			return d, transient
		}
		onPlan = onPlan || needed
	}
	// (6) namespace quota.
	if ps.o.Quota != nil {
		if ok, msg := ps.o.Quota(e.g); !ok {
			return Decision{Check: CheckQuota, Queue: q.name, Detail: msg}, personal
		}
	}
	return Decision{Admitted: true, HeadException: waived, Queue: q.name, OnPlan: onPlan}, admit
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
