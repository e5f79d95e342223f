package cache

// The starving head's reservation and the room of a reclaim or preemption
// plan: the parts of check 7 (feasible.go) beyond the plain free room.

import (
	"slices"
	"sort"

	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// Reserve implements queue.Placement: the starving group gets the nodes a
// first-fit-decreasing placement on empty nodes picks, preferring the nodes
// with the most free room now (the least to wait for), among the nodes no
// other group holds. Nothing new is admitted onto them while the
// reservation is renewed.
func (pp *passPlacement) Reserve(g queue.Group) bool {
	classes, want := pp.unitClasses(g.Key)
	if want == 0 {
		return false
	}
	r := pp.free.R
	n := len(pp.names)
	// Order every class's nodes by free room, largest first.
	byFree := make([]int32, 0, n)
	for i := range n {
		if pp.free.Blocked == nil || !pp.free.Blocked[i] || pp.reservedBy[i] == g.Key {
			byFree = append(byFree, int32(i))
		}
	}
	big := make([]int64, r)
	for i := range n {
		for j := range r {
			big[j] = max(big[j], pp.free.Free[i*r+j], 1)
		}
	}
	sort.SliceStable(byFree, func(a, b int) bool {
		return roomScore(pp.free.Free, big, int(byFree[a])) > roomScore(pp.free.Free, big, int(byFree[b]))
	})
	ordered := make([]placement.Class, len(classes))
	for k, c := range classes {
		ordered[k] = c
		if c.Nodes == nil {
			ordered[k].Nodes = byFree
			continue
		}
		ok := make(map[int32]bool, len(c.Nodes))
		for _, i := range c.Nodes {
			ok[i] = true
		}
		ordered[k].Nodes = nil
		ordered[k].Nodes = make([]int32, 0, len(c.Nodes))
		for _, i := range byFree {
			if ok[i] {
				ordered[k].Nodes = append(ordered[k].Nodes, i)
			}
		}
	}
	empty := placement.Room{R: r, Free: make([]int64, n*r)}
	for i, nr := range pp.rooms {
		for j, k := range pp.rnames {
			empty.Free[i*r+j] = nr.alloc[k]
		}
	}
	fit, steps := pp.placer.Place(&empty, ordered)
	if fit < want {
		return false
	}
	f := &pp.c.feasible
	res := f.reservations[g.Key]
	if res == nil {
		res = &reservation{}
		if f.reservations == nil {
			f.reservations = map[string]*reservation{}
		}
		f.reservations[g.Key] = res
	}
	res.nodes, res.gen = res.nodes[:0], pp.gen
	for _, s := range steps {
		name := pp.names[s.Node]
		if !slices.Contains(res.nodes, name) {
			res.nodes = append(res.nodes, name)
			pp.block(int(s.Node), g.Key)
		}
	}
	return true
}

// roomScore is node i's free room summed over resources, each as a share
// of the largest free amount big (so cpu and memory weigh alike).
func roomScore(free, big []int64, i int) float64 {
	r := len(big)
	s := 0.0
	for j := range r {
		if v := free[i*r+j]; v > 0 {
			s += float64(v) / float64(big[j])
		}
	}
	return s
}

// finish drops the reservations this pass did not renew: their group was
// admitted, left, or is no longer the starving head of its queue.
func (pp *passPlacement) finish() {
	f := &pp.c.feasible
	for key, res := range f.reservations {
		if res.gen != pp.gen {
			delete(f.reservations, key)
		}
	}
}

// block marks node i reserved for key.
func (pp *passPlacement) block(i int, key string) {
	n := len(pp.names)
	if pp.free.Blocked == nil {
		pp.free.Blocked = make([]bool, n)
		pp.reservedBy = make([]string, n)
	}
	pp.free.Blocked[i], pp.reservedBy[i] = true, key
}

// unblockOwn lifts, for key's own checks, the block on the nodes reserved
// for it, and returns them.
func (pp *passPlacement) unblockOwn(key string) []int {
	if pp.free.Blocked == nil {
		return nil
	}
	var own []int
	for i, k := range pp.reservedBy {
		if k == key {
			pp.free.Blocked[i] = false
			own = append(own, i)
		}
	}
	return own
}

func (pp *passPlacement) reblock(own []int, key string) {
	for _, i := range own {
		pp.block(i, key)
	}
}

// planRoom is the working room plus what plan frees for the group,
// approximated from the per-node, per-queue amounts: for reclaim, on each
// node, what reclaimable queues above their deserved share (other than the
// group's) hold there, each up to the queue's excess (its allocated above
// what it keeps); for preemption, what the group's own queue holds there,
// up to the queue's preemptible amount below the group's priority. The two
// are never added: CalderaReclaim runs one plan or the other for a group.
// Neither is spread over the nodes in an order: a budget spread in node
// order lands on the first nodes the victims use, which the group may not
// be able to use at all (a node selector, a member too large for what is
// left there), and a group that fits where the victims' other pods run is
// refused for good. Per node the room is bounded by what the victims hold
// there and by what the queue can give up in all; across nodes it is
// optimistic (checks 3-5 bound the total; the victims on a node may be
// younger, or gangs that cannot be split), which CalderaReclaim's exact
// plan settles: a gang it cannot make room for is released and backs off.
func (pp *passPlacement) planRoom(g queue.Group, plan queue.Plan) *placement.Room {
	c := pp.c
	r := pp.free.R
	pp.planFree = growInt64(pp.planFree, len(pp.free.Free))
	copy(pp.planFree, pp.free.Free)
	switch plan {
	case queue.PlanReclaim:
		if !pp.haveReclaim {
			pp.haveReclaim = true
			pp.fillReclaimRoom()
		}
		for i, v := range pp.reclaimRoom {
			pp.planFree[i] += v
		}
		// Reclaim does not take from the group's own queue: its part,
		// counted for every group in the pass, is taken out again.
		if own := pp.excess[g.Queue]; own != nil {
			for i, nr := range pp.rooms {
				held := nr.byQueue[g.Queue]
				for j, k := range pp.rnames {
					if v := min(held[k], own[j]); v > 0 {
						pp.planFree[i*r+j] -= v
					}
				}
			}
		}
	case queue.PlanPreempt:
		// What the queue's lower-priority pods hold: checks 3-5 bound its
		// total already, but nodes only know what the queue holds, at every
		// priority, so every node counts what the queue holds there, up to
		// the total preemption can free.
		pre := c.preemptibleLocked(g.Queue, g.Priority)
		for i, nr := range pp.rooms {
			held := nr.byQueue[g.Queue]
			for j, k := range pp.rnames {
				if v := min(held[k], pre[k]); v > 0 {
					pp.planFree[i*r+j] += v
				}
			}
		}
	}
	return &placement.Room{R: r, Free: pp.planFree, Blocked: pp.free.Blocked}
}

// fillReclaimRoom computes, once a pass, each reclaimable queue's excess
// above what it keeps (max of its deserved share and its guarantee) into
// pp.excess, and into pp.reclaimRoom, per node, the sum over those queues
// of what each holds there, up to its excess.
func (pp *passPlacement) fillReclaimRoom() {
	c := pp.c
	a := c.adm
	r := pp.free.R
	pp.reclaimRoom = growInt64(pp.reclaimRoom, len(pp.free.Free))
	clear(pp.reclaimRoom)
	if pp.excess == nil {
		pp.excess = map[string][]int64{}
	}
	clear(pp.excess)
	if !c.reclaim || a.shares == nil {
		return
	}
	for name, us := range a.usage {
		spec, ok := a.tree.Spec(name)
		if !ok || !spec.Reclaimable {
			continue
		}
		des := a.shares.Deserved(name)
		var budget []int64
		for j, k := range pp.rnames {
			keep := max(des[k], spec.Guarantee[k])
			if over := us.allocated[k] - keep; over > 0 {
				if budget == nil {
					budget = make([]int64, r)
				}
				budget[j] = over
			}
		}
		if budget != nil {
			pp.excess[name] = budget
		}
	}
	if len(pp.excess) == 0 {
		return
	}
	for i, nr := range pp.rooms {
		for name, held := range nr.byQueue {
			budget := pp.excess[name]
			if budget == nil {
				continue
			}
			for j, k := range pp.rnames {
				if v := min(held[k], budget[j]); v > 0 {
					pp.reclaimRoom[i*r+j] += v
				}
			}
		}
	}
}
