package admission

import (
	"slices"
	"sort"

	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/plan"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// reclaimPool is one pass's view of what reclaim can take back: per victim
// queue (a reclaimable queue above what it keeps) what is left of its
// excess, and per node what the pass's admissions have already drawn from
// the queues there.
type reclaimPool struct {
	ready   bool
	victims []string  // sorted
	budget  [][]int64 // per victim, per resource: excess not yet drawn
	drawn   map[drawKey]int64
	drawnAt []int64 // per node and resource: drawn from every victim
	// last is the attribution of the last successful reclaim Check, which
	// Commit draws.
	last []draw
	// Scratch space of attribute.
	base  []int64
	left  [][]int64
	local map[drawKey]int64
}

type drawKey struct{ node, victim, res int32 }

type draw struct {
	drawKey
	v int64
}

// planRoom is the working room plus what plan frees for the group,
// approximated from the per-node, per-queue amounts: for reclaim, on each
// node, what reclaimable queues above what they keep (other than the
// group's) hold there, each up to what is left of the queue's excess; for
// preemption, what the group's own queue holds there, up to the queue's
// preemptible amount below the group's priority. The two are never added:
// CalderaReclaim runs one plan or the other for a group. Neither is spread
// over the nodes in an order: a budget spread in node order lands on the
// first nodes the victims use, which the group may not be able to use at
// all (a node selector, a member too large for what is left there), and a
// group that fits where the victims' other pods run is refused for good.
// Per node the room is bounded by what the victims hold there and by what
// the queue can give up in all; a reclaim placement is then checked against
// each victim's excess in total (attribute), so admissions in one pass never
// count one queue's excess twice. Preemption is optimistic across nodes
// (the capability, fair-share and cluster-room checks bound its total). Per
// node both are optimistic (the victims may be younger, or gangs that
// cannot be split), which CalderaReclaim's exact plan settles: a gang it
// cannot make room for is released and backs off.
func (pp *passPlacement) planRoom(g queue.Group, plan queue.Plan) *placement.Room {
	r := pp.Free.R
	pp.planFree = slices.Grow(pp.planFree[:0], len(pp.Free.Free))[:len(pp.Free.Free)]
	copy(pp.planFree, pp.Free.Free)
	switch plan {
	case queue.PlanReclaim:
		rp := pp.reclaimPool()
		for i, nr := range pp.Nodes {
			for j := range r {
				pp.planFree[i*r+j] += rp.drawnAt[i*r+j]
			}
			for vi, name := range rp.victims {
				held := nr.ByQueue[name]
				if held == nil || name == g.Queue {
					continue
				}
				for j, k := range pp.Resources {
					key := drawKey{int32(i), int32(vi), int32(j)}
					if v := min(held[k]-rp.drawn[key], rp.budget[vi][j]); v > 0 {
						pp.planFree[i*r+j] += v
					}
				}
			}
		}
	case queue.PlanPreempt:
		// What the queue's lower-priority pods hold: the capability,
		// fair-share and cluster-room checks bound its total already,
		// but nodes only know what the queue holds, at every priority,
		// so every node counts what the queue holds there, up to the
		// total preemption can free.
		pre := pp.adm.preemptibleLocked(g.Queue, g.Priority)
		for i, nr := range pp.Nodes {
			held := nr.ByQueue[g.Queue]
			for j, k := range pp.Resources {
				if v := min(held[k], pre[k]); v > 0 {
					pp.planFree[i*r+j] += v
				}
			}
		}
	}
	pp.keepReserved(g)
	return &placement.Room{R: r, Free: pp.planFree, Blocked: pp.Free.Blocked}
}

// keepReserved caps, on the nodes the last pass's reservations hold, the
// room a plan frees for g at what the CalderaReservation Filter will let
// its members take there: at the start of each reservation that begins
// before g would end (other than g's own), what is free now plus what
// running pods give back by then must still cover what the reservations
// holding room then need on the node. A victim's room counts only as its
// limit gives it back: the reserved group cannot count on an eviction
// made for another. Without this cap a group admitted on a plan evicts,
// finds the reserved room refused by the Filter, and is released.
// O(reservations^2 x their nodes), in plan checks only.
func (pp *passPlacement) keepReserved(g queue.Group) {
	f := pp.feas
	if len(f.Timed) == 0 {
		return
	}
	end := plan.Unbounded
	if l := pp.limitOf(g.Key); l > 0 {
		end = pp.Tp.now + l
	}
	r := pp.Free.R
	for _, t := range f.Timed {
		if t.Key == g.Key || t.Start >= end {
			continue
		}
		for ni, n := range t.Nodes {
			i, ok := pp.Index[n]
			if !ok || ni >= len(t.Released) {
				continue
			}
			need := f.needAt(n, t.Start, g.Key)
			for j, k := range pp.Resources {
				limit := max(0, pp.Free.Free[i*r+j]+t.Released[ni][k]-need[k])
				pp.planFree[i*r+j] = min(pp.planFree[i*r+j], limit)
			}
		}
	}
}

// reclaimPool builds, on the pass's first reclaim Check, each reclaimable
// queue's excess above what it keeps (max of its deserved share and its
// guarantee).
func (pp *passPlacement) reclaimPool() *reclaimPool {
	rp := &pp.pool
	if rp.ready {
		return rp
	}
	rp.ready = true
	a := pp.adm
	r := pp.Free.R
	rp.victims, rp.budget = rp.victims[:0], rp.budget[:0]
	rp.drawnAt = slices.Grow(rp.drawnAt[:0], len(pp.Free.Free))[:len(pp.Free.Free)]
	clear(rp.drawnAt)
	if rp.drawn == nil {
		rp.drawn = map[drawKey]int64{}
	}
	clear(rp.drawn)
	if !pp.reclaim || a.Shares == nil {
		return rp
	}
	for name, us := range a.Usage {
		spec, ok := a.Tree.Spec(name)
		if !ok || !spec.Reclaimable {
			continue
		}
		des := a.Shares.Deserved(name)
		for _, k := range pp.Resources {
			if us.Allocated[k]-max(des[k], spec.Guarantee[k]) > 0 {
				rp.victims = append(rp.victims, name)
				break
			}
		}
	}
	sort.Strings(rp.victims)
	for _, name := range rp.victims {
		us, des := a.Usage[name], a.Shares.Deserved(name)
		spec, _ := a.Tree.Spec(name)
		b := make([]int64, r)
		for j, k := range pp.Resources {
			b[j] = max(us.Allocated[k]-max(des[k], spec.Guarantee[k]), 0)
		}
		rp.budget = append(rp.budget, b)
	}
	return rp
}

// attribute checks a reclaim placement (steps of classes, found on
// planRoom's room) against the victims' excess in total: each member takes
// what is left of its node's own free room first, then what the victims
// there hold, each within what is left of its excess. It returns how many
// steps, in order, could be so attributed, and keeps their draws for
// Commit.
func (pp *passPlacement) attribute(g queue.Group, classes []placement.Class, steps []placement.Step) int {
	rp := &pp.pool
	r := pp.Free.R
	rp.last = rp.last[:0]
	rp.base = slices.Grow(rp.base[:0], len(pp.Free.Free))[:len(pp.Free.Free)]
	for i := range rp.base {
		rp.base[i] = pp.Free.Free[i] + rp.drawnAt[i]
	}
	rp.left = rp.left[:0]
	for _, b := range rp.budget {
		rp.left = append(rp.left, b) // copied on first write below
	}
	copied := make([]bool, len(rp.budget))
	if rp.local == nil {
		rp.local = map[drawKey]int64{}
	}
	clear(rp.local)
	for n, s := range steps {
		i := int(s.Node)
		mark := len(rp.last)
		for j, v := range classes[s.Class].Request {
			if v <= 0 {
				continue
			}
			avail := rp.base[i*r+j]
			if avail >= v {
				rp.base[i*r+j] -= v
				continue
			}
			need := v - avail
			rp.base[i*r+j] = 0
			for vi, name := range rp.victims {
				held := pp.Nodes[i].ByQueue[name]
				if held == nil || name == g.Queue || need == 0 {
					continue
				}
				key := drawKey{int32(i), int32(vi), int32(j)}
				d := min(need, held[pp.Resources[j]]-rp.drawn[key]-rp.local[key], rp.left[vi][j])
				if d <= 0 {
					continue
				}
				if !copied[vi] {
					rp.left[vi], copied[vi] = append([]int64(nil), rp.left[vi]...), true
				}
				rp.left[vi][j] -= d
				rp.local[key] += d
				rp.last = append(rp.last, draw{key, d})
				need -= d
			}
			if need > 0 {
				rp.last = rp.last[:mark]
				return n
			}
		}
	}
	return len(steps)
}

// commitDraws takes from the victims' excess what the last successful
// reclaim Check attributed to them.
func (pp *passPlacement) commitDraws() {
	rp := &pp.pool
	r := pp.Free.R
	for _, d := range rp.last {
		rp.budget[d.victim][d.res] -= d.v
		rp.drawn[d.drawKey] += d.v
		rp.drawnAt[int(d.node)*r+int(d.res)] += d.v
	}
	rp.last = rp.last[:0]
}
