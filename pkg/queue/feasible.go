package queue

import "time"

// Placement is the optional placement check (CheckPlacement, checkPlacement):
// whether a group's members can be placed together on the nodes, not only in
// the cluster's aggregate. The aggregate checks cannot see fragmentation:
// five 3-cpu members fit 16 free cpu in sum but not four 4-cpu nodes, and
// such a gang, once admitted, would hold its room in every queue's and the
// cluster's inflight while it fails to place, keeping out work that fits. The
// cache implements it over its per-node free room with pkg/placement's
// first-fit-decreasing.
//
// Within a pass the implementation keeps its own working room: the groups
// it is asked to Commit take their room there, so later checks of the same
// pass see it gone.
type Placement interface {
	// Check reports how many of g's minMember members fit the room left
	// (fit) out of how many it must place (want). With a plan other than
	// PlanNone, the room that plan would free for the group counts as free
	// too. A group is admitted only when fit == want.
	Check(g Group, plan Plan) (fit, want int)
	// Commit takes the room of the last successful Check of g: g is admitted.
	Commit(g Group)
	// Reserve is called for a group at the head of its queue, refused by
	// Check, that has waited StarvationThreshold: it holds for g the room g
	// needs on the cluster's total (nothing else is admitted there) until a
	// later pass stops renewing it, and reports false when g cannot be
	// placed even on empty nodes (then nothing is reserved for it, and its
	// queue is not held either).
	Reserve(g Group) bool
}

// Planner is an optional extension of Placement: admission over time
// (pkg/plan). A Placement that is also a Planner keeps reservations for the
// groups that cannot start now, and its Check refuses a group (fit < want)
// whose start now would delay one of them. A reservation holds room from
// its start on; a group whose run-time limit ends before that start may use
// it now (backfill).
type Planner interface {
	// Hold plans a reservation for g, refused for room now (a check that
	// more room would cure, or CheckReservation): the earliest time at
	// which its members fit together, given when running pods end. Later
	// checks of the pass, and of later passes until g is admitted or no
	// longer held, refuse what would delay it. The pass calls it for at
	// most Options.ReservationsPerQueue groups of each queue, in queue
	// order; the Planner may bound the total. It reports whether g holds
	// a reservation now: the starvation guard then holds g's room through
	// it (later work may still use that room if it ends before g starts)
	// instead of keeping the empty nodes Placement.Reserve finds from
	// everyone.
	Hold(g Group) bool
	// Delayed reports whether the last Check(g, PlanNone) refused g only
	// because starting it now would delay a reservation: which one (the
	// earliest such) and when that reservation starts.
	Delayed(g Group) (reservation Key, start time.Time, delayed bool)
}

// Plan is the eviction plan whose room the placement check may count for a
// group.
type Plan uint8

const (
	// PlanNone: the nodes' free room only.
	PlanNone Plan = iota
	// PlanReclaim: plus what reclaimable queues other than the group's
	// hold above what they keep.
	PlanReclaim
	// PlanPreempt: plus what the group's queue holds below its priority.
	PlanPreempt
)

// prepareReclaimable fills, per healthy reclaimable queue, what its own
// groups hold above what they keep (max of their deserved part and the
// guarantee), and per queue the sum of that over its subtree: the room a
// reclaim plan can take back inside a parent's subtree.
func (p *Pending) prepareReclaimable() {
	ps := &p.pass
	s := ps.s
	r := ps.r
	n := len(s.tree.specs)
	ps.excess = growInt64s(ps.excess, n*r)
	ps.subEx = growInt64s(ps.subEx, n*r)
	clear(ps.excess)
	clear(ps.subEx)
	if !ps.o.Reclaim {
		return
	}
	for _, i := range s.tree.order {
		spec := s.tree.specs[i]
		if !spec.Reclaimable {
			continue
		}
		for j := range r {
			keep := max(ps.selfDes[i*r+j], nn(spec.Guarantee[p.rnames[j]]))
			if over := ps.selfAl[i*r+j] - keep; over > 0 {
				ps.excess[i*r+j] = over
			}
		}
	}
	// order lists parents before children: sum the subtrees bottom-up.
	for k := len(s.tree.order) - 1; k >= 0; k-- {
		i := s.tree.order[k]
		for j := range r {
			ps.subEx[i*r+j] = satAdd(ps.subEx[i*r+j], ps.excess[i*r+j])
			if par := ps.parent[i]; par >= 0 {
				ps.subEx[par*r+j] = satAdd(ps.subEx[par*r+j], ps.subEx[i*r+j])
			}
		}
	}
}

// fillFreeable sets ps.freeable[l*r+j], for each level l from e's queue up to
// the top, to what reclaim can take back inside l's subtree from queues off
// the group's own path: what its queue's siblings (and its ancestors'
// siblings, and their descendants) hold above what they keep. Reclaiming it
// lowers l's allocated, so the capability and fair-share checks at l count it
// as room. Only a group within its own queue's deserved share is entitled to
// it, as reclaim itself requires (reclaim.Decide). The queue's own level and
// its path's own groups are never counted: reclaim does not take from the
// group's own queue, and whether it would take from an ancestor's own groups
// is not assumed. Nothing is counted in a preemption try (reclaim false):
// that plan takes only from the group's own queue. Reports whether anything
// was counted.
func (p *Pending) fillFreeable(e *entry, node int, reclaim bool) bool {
	ps := &p.pass
	r := ps.r
	ps.freeable = growInt64s(ps.freeable, len(ps.excess))
	any := false
	for _, a := range e.req {
		ps.freeable[node*r+int(a.r)] = 0
	}
	if !ps.o.Reclaim || !reclaim {
		for l := ps.parent[node]; l >= 0; l = ps.parent[l] {
			for _, a := range e.req {
				ps.freeable[l*r+int(a.r)] = 0
			}
		}
		return false
	}
	entitled := !e.g.freeRoomOnly(ps.now)
	for _, a := range e.req {
		i := node*r + int(a.r)
		if !fits(satAdd(ps.alloc[i], ps.infl[i]), a.v, ps.deserved[i]) {
			entitled = false
			break
		}
	}
	prev := node
	for l := ps.parent[node]; l >= 0; prev, l = l, ps.parent[l] {
		for _, a := range e.req {
			i, pi := l*r+int(a.r), prev*r+int(a.r)
			f := int64(0)
			if entitled {
				f = max(ps.subEx[i]-ps.excess[i]-ps.subEx[pi]+ps.freeable[pi], 0)
			}
			ps.freeable[i] = f
			any = any || f > 0
		}
	}
	return any
}
