package queue

// Lending idle room: the pass's last step (Options.Lend).
//
// The fair-share check keeps every queue within its deserved share, which is
// fair but not work-conserving: when the queues below their share hold only
// groups larger than what is left of it (a 64-cpu gang in a queue with 40 cpu
// to go), the cluster's idle room waits for their own work to finish, while
// other queues have groups that would fit it now. Lending admits those groups
// on the idle room after the pass has served every group entitled to it. The
// borrower's queue then holds more than its deserved share, which is exactly
// what reclaim takes back: a group that later comes within its share counts
// the loan as reclaimable room (in the cluster check) and its reclaim plan
// evicts it. So a loan costs the borrower an eviction, never a lender its
// share, and it is made only where that can work: reclaim runs and the
// borrower's queue is reclaimable.

// lend runs after the queues' turns: it admits groups refused only by the
// fair-share check (CheckFairness) onto the cluster's idle room (no reclaim
// or preemption room counted), one per queue per round, queues in the pass's
// order, until a round admits nothing. A group within its share that waits
// for room (refused by the cluster or the placement check) limits it two
// ways. Its own queue borrows nothing: reclaim never takes from the group's
// own queue, so a loan there would keep it out. And nothing is lent at all
// when the cluster is short of room in sum (refused by the cluster check: the
// group is gathering the room as work finishes, and every loan there would
// become an eviction when it has gathered enough; on the quality benchmark's
// trace, whose large gangs wait so, such loans lowered utilization), or when
// the group could not count reclaim's room (a head that took the fair-share
// check's head exception, or a group in its window of free room only). A
// group refused only for placement (the room is there in sum but split over
// nodes) loses nothing to a loan, since the placement check counts a loan as
// room reclaim takes back for it. Its cost is O(a x (log q + Lookahead)) for
// a loans and q queues, on groups the pass already examined.
func (p *Pending) lend() {
	ps := &p.pass
	if !ps.o.Lend || !ps.o.Reclaim || ps.roomWanted || ps.plansWaiting > 0 {
		return
	}
	// A group admitted on a plan's room, in this pass or an earlier one
	// (Cluster.PlansWaiting), whose plan is not made yet: a plan evicts
	// the youngest pods above their share, which a loan made now would be.
	for _, o := range ps.res.Admitted {
		if o.Decision.OnPlan {
			return
		}
	}
	// Queues take turns as in the pass itself, through its queue heap (empty
	// once the queues' turns are over): lowest share first, re-placed after
	// each loan, dropped when nothing of theirs fits the idle room left
	// (that room only shrinks).
	for _, q := range ps.touched {
		if q.node < 0 || q.wants || !ps.s.tree.specs[q.node].Reclaimable {
			continue
		}
		for _, e := range q.skip {
			if p.mayBorrow(q, e) {
				q.dyn = p.dynShare(q)
				p.qpush(q)
				break
			}
		}
	}
	for len(ps.qheap) > 0 {
		q := ps.qheap[0]
		if p.lendOne(q) {
			q.dyn = p.dynShare(q)
			p.qdown(0)
		} else {
			p.qremove(0)
		}
	}
}

// lendOne admits q's first group refused by the fair-share check that fits
// the idle room, in the queue's order; it reports whether it admitted one.
func (p *Pending) lendOne(q *pqueue) bool {
	ps := &p.pass
	for i, e := range q.skip {
		if !p.mayBorrow(q, e) {
			continue
		}
		d, ok := p.evaluateLoan(e, q)
		if !ok {
			continue
		}
		if pl := ps.o.Placement; pl != nil {
			pl.Commit(e.g)
		}
		q.skip = append(q.skip[:i], q.skip[i+1:]...)
		for j := range ps.res.Refused {
			if ps.res.Refused[j].Group.Key == e.g.Key {
				ps.res.Refused = append(ps.res.Refused[:j], ps.res.Refused[j+1:]...)
				break
			}
		}
		q.refused--
		if q.ahead == e {
			q.ahead = nil
			q.headKey = Key{}
		}
		if reserved(q, ps.gen) {
			q.stopGen = 0 // its head is admitted: nothing holds the queue
		}
		p.apply(e, q)
		q.admitted++
		ps.res.Admitted = append(ps.res.Admitted, Outcome{Group: e.g, Decision: d})
		return true
	}
	return false
}

// mayBorrow says whether e, a group of q the pass refused, may be lent room:
// refused by the fair-share check, and, when the starvation guard holds q for
// its head, that head itself (the guard keeps others from overtaking it, and
// a loan is the head going first).
func (p *Pending) mayBorrow(q *pqueue, e *entry) bool {
	if e.decision.Check != CheckFairness {
		return false
	}
	return !reserved(q, p.pass.gen) || q.stop.Behind == e.g.Key
}

// reserved says whether the starvation guard stopped q in pass gen.
func reserved(q *pqueue, gen uint64) bool {
	return q.stopGen == gen && q.stop.Check == CheckReserved
}

// evaluateLoan runs the checks other than the fair-share check for e on the
// idle room only: capability without what reclaim frees, the cluster
// without reclaim or preemption room, placement on the free nodes, and the
// quota.
func (p *Pending) evaluateLoan(e *entry, q *pqueue) (Decision, bool) {
	ps := &p.pass
	r := ps.r
	for l := q.node; l >= 0; l = ps.parent[l] {
		for _, a := range e.req {
			i := l*r + int(a.r)
			if !fits(satAdd(ps.alloc[i], ps.infl[i]), a.v, ps.realCap[i]) {
				return Decision{}, false
			}
		}
	}
	for _, a := range e.req {
		if !fits(ps.cused[a.r], a.v, ps.ceil[a.r]) {
			return Decision{}, false
		}
	}
	if pl := ps.o.Placement; pl != nil {
		if fit, want := pl.Check(e.g, PlanNone); fit < want {
			return Decision{}, false
		}
	}
	if ps.o.Quota != nil {
		if ok, _ := ps.o.Quota(e.g); !ok {
			return Decision{}, false
		}
	}
	return Decision{Admitted: true, Lent: true, Queue: q.name}, true
}
