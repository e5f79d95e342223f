package queue

import "slices"

// The admission checks, one method each. The queue-wide one
// (checkQueueOpen) runs once per queue and pass; the others run for one
// group in evaluateWith, in this order:
//
//	checkRequestCanFit   the request alone fits every limit it can ever have
//	checkCapability      CheckCapability: real capability, queue and ancestors
//	checkFairShare       CheckFairness: deserved share, queue and ancestors
//	checkClusterRoom     CheckCluster: the cluster's idle room
//	checkPlacement       CheckPlacement: the members fit on the nodes
//	checkQuota           CheckQuota: the namespace quota callback
//
// A group check returns admit when the group passes it; otherwise it
// leaves the refusal in candidate.refused and returns its verdict. The
// first refusal ends the try. (Returning only the verdict keeps the passes,
// the common case on the hot path, from copying a Decision.)

// candidate is one group under evaluation in one try of evaluateWith: the
// group, its queue, and what the earlier checks of the try found that the
// later checks and the decision read.
type candidate struct {
	e *entry
	q *pqueue
	// head: no group ahead of e in q was refused for room in this pass, so
	// e may use the head exception of checkFairShare.
	head bool
	// preempting: the try counts what preemption frees in q (pass.pre):
	// evaluate's second, preemption try. It then counts no reclaim room.
	preempting bool
	// reclaimed: what reclaim takes back counts as room at some ancestor
	// (pass.freeable).
	reclaimed bool
	// waived: checkFairShare took the head exception at some level.
	waived bool
	// plan is the eviction plan whose room checkClusterRoom counted, which
	// checkPlacement may count too.
	plan Plan
	// onPlan: the group fits only on room an eviction plan frees
	// (Decision.OnPlan).
	onPlan bool
	// refused is the refusal of the check that did not return admit.
	refused Decision
}

// refuse records in c the refusal of c's group by check on resource a at
// tree node level (-1: the cluster), with avail what remained of the limit.
func (p *Pending) refuse(c *candidate, check Check, level int, a amount, avail int64) {
	queue := c.q.name
	if level >= 0 {
		queue = p.pass.s.tree.specs[level].Name
	}
	c.refused = Decision{Check: check, Queue: queue, Resource: p.rnames[a.r], Request: a.v, Available: max(avail, 0)}
	if check == CheckCapability || check == CheckCluster {
		from := level
		if from < 0 {
			from = c.q.node
		}
		c.refused.ClusterBound = p.clusterBound(from, a)
	}
}

// clusterBound reports whether more room in the cluster could lift a
// capability refusal at level: no queue from level up sets a capability of
// its own for the resource that what it holds and reserves, with the
// request, exceeds. Then what binds is the cluster's size as the tree
// divides it, which new nodes raise; otherwise no node ever admits the
// group, and it must not reach an autoscaler. O(depth).
func (p *Pending) clusterBound(level int, a amount) bool {
	ps := &p.pass
	name := p.rnames[a.r]
	for l := level; l >= 0; l = ps.parent[l] {
		configured, sets := ps.s.tree.specs[l].Capability[name]
		if !sets {
			continue
		}
		i := l*ps.r + int(a.r)
		if !fits(satAdd(ps.alloc[i], ps.infl[i]), a.v, configured) {
			return false
		}
	}
	return true
}

// checkQueueOpen refuses every ready group of q at once, stopping the queue
// for the pass, when its queue is missing from the tree (CheckQueueMissing),
// has a tree Problem such as a missing parent or a cycle
// (CheckQueueBroken: it has no share to admit into) or is Closed
// (CheckQueueClosed: it takes no new work). Otherwise it returns the
// queue's node in the pass's tree.
func (p *Pending) checkQueueOpen(q *pqueue) (node int, d Decision, ok bool) {
	t := p.pass.s.tree
	i, found := t.index[q.name]
	switch {
	case !found:
		return -1, Decision{Check: CheckQueueMissing, Queue: q.name}, false
	case t.problems[i] != nil:
		return -1, Decision{Check: CheckQueueBroken, Queue: q.name, Detail: t.problems[i].Message}, false
	case !t.specs[i].Open():
		return -1, Decision{Check: CheckQueueClosed, Queue: q.name}, false
	}
	return i, Decision{}, true
}

// checkRequestCanFit refuses, as Permanent, a group whose request alone
// exceeds the tightest limit it can ever have: the cluster's allocatable x
// overcommit (CheckCluster) or the real capability of its queue or an
// ancestor (CheckCapability). Only a spec or cluster change can admit such
// a group, so it is reported against that limit whatever else fails, and
// set aside rather than left to hold its queue. The limit is named where it
// comes from: the cluster, or the highest queue that sets it (real
// capabilities only shrink downwards, so that is the queue to change).
func (p *Pending) checkRequestCanFit(c *candidate) verdict {
	ps := &p.pass
	r := ps.r
	for _, a := range c.e.req {
		limit, at := ps.ceil[a.r], -1
		for l := c.q.node; l >= 0; l = ps.parent[l] {
			if capability := ps.realCap[l*r+int(a.r)]; capability < limit || (at >= 0 && capability == limit) {
				limit, at = capability, l
			}
		}
		if a.v <= limit {
			continue
		}
		check := CheckCapability
		if at < 0 {
			check = CheckCluster
		}
		p.refuse(c, check, at, a, limit)
		c.refused.Permanent = true
		return permanent
	}
	return admit
}

// countEvictionRoom decides what room beyond the free room the try counts:
// what preemption frees in the group's queue when pass.pre holds any (the
// preemption try), else what reclaim can take back at each ancestor
// (fillFreeable). Never both: CalderaReclaim runs one plan or the other, so
// a group passing only with both would be admitted and never placed,
// holding its queue's room meanwhile.
func (p *Pending) countEvictionRoom(c *candidate) {
	c.preempting = slices.ContainsFunc(p.pass.pre, func(v int64) bool { return v > 0 })
	c.reclaimed = p.fillFreeable(c.e, c.q.node, !c.preempting)
}

// checkCapability refuses a group that would take its queue or an ancestor
// past its real capability: allocated + inflight + request <= real
// capability, on every resource it requests. A capability is a hard limit,
// so no head exception applies. Room the try's plan frees counts: what
// preemption frees in the queue, and at an ancestor what reclaim can take
// back from queues off the group's path inside its subtree. Without the
// latter a child starved under its parent's capability by a sibling above
// its deserved share would be refused at the parent forever, and reclaim,
// which only runs for admitted groups' pods, would never run for it.
func (p *Pending) checkCapability(c *candidate) verdict {
	ps := &p.pass
	r := ps.r
	for l := c.q.node; l >= 0; l = ps.parent[l] {
		for _, a := range c.e.req {
			i := l*r + int(a.r)
			used := max(satAdd(ps.alloc[i], ps.infl[i])-ps.pre[a.r]-ps.freeable[i], 0)
			if !fits(used, a.v, ps.realCap[i]) {
				p.refuse(c, CheckCapability, l, a, ps.realCap[i]-used)
				return transient
			}
		}
	}
	return admit
}

// checkFairShare refuses a group that would take its queue or an ancestor
// past its deserved share: allocated + inflight + request <= deserved
// (Volcano proportion's rule), so that no queue grows into room another
// deserves. When the queue has children, its own groups compete with them
// for one part of its share, which is checked first. It waives a level for
// a head whose request alone exceeds that level's share (c.waived): such a
// group could never pass there, and would wait forever.
func (p *Pending) checkFairShare(c *candidate) verdict {
	ps := &p.pass
	node := c.q.node
	if ps.hasKids[node] && !p.checkShareLevel(c, node, ps.selfDes, ps.selfAl, ps.selfIn, true) {
		return transient
	}
	for l := node; l >= 0; l = ps.parent[l] {
		if !p.checkShareLevel(c, l, ps.deserved, ps.alloc, ps.infl, false) {
			return transient
		}
	}
	return admit
}

// checkShareLevel is checkFairShare at tree node l, whose deserved,
// allocated and inflight amounts are in deserved, alloc and infl; own says
// they are the queue's own part, where reclaim room never counts (reclaim
// does not take from the group's own queue). A resource preemption in the
// queue frees in full is left out (swap): the group takes the place of
// lower-priority pods and the level does not grow.
func (p *Pending) checkShareLevel(c *candidate, l int, deserved, alloc, infl []int64, own bool) bool {
	ps := &p.pass
	base := l * ps.r
	if c.head {
		for _, a := range c.e.req {
			if a.v > deserved[base+int(a.r)] {
				c.waived = true
				return true
			}
		}
	}
	for _, a := range c.e.req {
		if swap(ps.pre, a) {
			continue
		}
		i := base + int(a.r)
		used := satAdd(alloc[i], infl[i]) - ps.pre[a.r]
		if !own {
			used -= ps.freeable[i]
		}
		used = max(used, 0)
		if !fits(used, a.v, deserved[i]) {
			p.refuse(c, CheckFairness, l, a, deserved[i]-used)
			return false
		}
	}
	return true
}

// checkClusterRoom refuses a group the cluster has no idle room for: used +
// every queue's inflight + request <= allocatable x overcommit, on the
// resources the group requests only. A group may also count room an
// eviction plan frees: in the preemption try what preemption frees, else
// what reclaimable queues hold above what they keep, unless the group took
// the head exception (it is above its share, which reclaim never serves) or
// is in its window of free room only. It records the plan whose room it
// counted for checkPlacement, and whether the group depends on a plan.
func (p *Pending) checkClusterRoom(c *candidate) verdict {
	ps := &p.pass
	c.plan = PlanNone
	if c.reclaimed {
		c.plan = PlanReclaim
	}
	freeOnly := c.e.g.freeRoomOnly(ps.now)
	c.onPlan = c.preempting || c.reclaimed
	for _, a := range c.e.req {
		limit := ps.ceil[a.r]
		c.onPlan = c.onPlan || !fits(ps.cused[a.r], a.v, limit)
		switch {
		case c.preempting:
			limit = satAdd(limit, ps.pre[a.r])
			if ps.pre[a.r] > 0 {
				c.plan = PlanPreempt
			}
		case !c.waived && !freeOnly:
			limit = satAdd(limit, ps.reclaim[a.r])
			if ps.reclaim[a.r] > 0 {
				c.plan = PlanReclaim
			}
		}
		if !fits(ps.cused[a.r], a.v, limit) {
			p.refuse(c, CheckCluster, -1, a, limit-ps.cused[a.r])
			return transient
		}
	}
	return admit
}

// checkPlacement refuses a group whose members cannot be placed together
// on the nodes (Options.Placement). The sums the other checks compare
// cannot see room split over nodes (five 3-cpu members fit 16 free cpu but
// not four 4-cpu nodes), and a gang admitted that way would hold its room
// in every limit while it fails to place. The nodes' free room is tried
// first; only when it is short is the room of c.plan added, and the group
// then depends on that plan. Reclaim's and preemption's rooms are never
// added together: CalderaReclaim makes one plan or the other. It runs
// before checkQuota, whose callback counts what it agrees to.
func (p *Pending) checkPlacement(c *candidate) verdict {
	pl := p.pass.o.Placement
	if pl == nil {
		return admit
	}
	fit, want := pl.Check(c.e.g, PlanNone)
	if fit >= want {
		return admit
	}
	c.refused = Decision{Check: CheckPlacement, Queue: c.q.name, Members: int32(fit), MinMember: int32(want)}
	if pn, ok := pl.(Planner); ok {
		if key, at, delayed := pn.Delayed(c.e.g); delayed {
			c.refused = Decision{Check: CheckReservation, Queue: c.q.name, Behind: key, Since: at}
		}
	}
	if c.plan != PlanNone {
		fit, want = pl.Check(c.e.g, c.plan)
		if fit >= want {
			c.onPlan = true
			return admit
		}
		if d := &c.refused; d.Check == CheckPlacement {
			d.Members, d.MinMember, d.Detail = int32(fit), int32(want), "with the room reclaim and preemption can free"
		}
	}
	return transient
}

// checkQuota refuses a group the namespace quota callback (Options.Quota)
// refuses. The refusal is the group's own (personal): it says nothing about
// the queue's room, so the group does not become its queue's head. It runs
// last, because a callback that tracks namespace usage counts what it
// agrees to.
func (p *Pending) checkQuota(c *candidate) verdict {
	quota := p.pass.o.Quota
	if quota == nil {
		return admit
	}
	if ok, msg := quota(c.e.g); !ok {
		c.refused = Decision{Check: CheckQuota, Queue: c.q.name, Detail: msg}
		return personal
	}
	return admit
}
