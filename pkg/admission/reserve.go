package admission

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
	r := pp.Free.R
	n := len(pp.Names)
	// Order every class's nodes by free room, largest first.
	byFree := make([]int32, 0, n)
	for i := range n {
		if pp.Free.Blocked == nil || !pp.Free.Blocked[i] || pp.reservedBy[i] == g.Key {
			byFree = append(byFree, int32(i))
		}
	}
	big := make([]int64, r)
	for i := range n {
		for j := range r {
			big[j] = max(big[j], pp.Free.Free[i*r+j], 1)
		}
	}
	sort.SliceStable(byFree, func(a, b int) bool {
		return roomScore(pp.Free.Free, big, int(byFree[a])) > roomScore(pp.Free.Free, big, int(byFree[b]))
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
	for i, nr := range pp.Nodes {
		for j, k := range pp.Resources {
			empty.Free[i*r+j] = nr.Alloc[k]
		}
	}
	fit, steps := pp.placer.Place(&empty, ordered)
	if fit < want {
		return false
	}
	f := pp.feas
	res := f.Reservations[g.Key]
	if res == nil {
		res = &reservation{}
		if f.Reservations == nil {
			f.Reservations = map[queue.Key]*reservation{}
		}
		f.Reservations[g.Key] = res
	}
	res.nodes, res.gen = res.nodes[:0], pp.gen
	for _, s := range steps {
		name := pp.Names[s.Node]
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

// Finish drops the reservations this pass did not renew: their group was
// admitted, left, or is no longer the starving head of its queue.
func (pp *passPlacement) Finish() {
	pp.finishTime()
	f := pp.feas
	for key, res := range f.Reservations {
		if res.gen != pp.gen {
			delete(f.Reservations, key)
		}
	}
}

// block marks node i reserved for key.
func (pp *passPlacement) block(i int, key queue.Key) {
	n := len(pp.Names)
	if pp.Free.Blocked == nil {
		pp.Free.Blocked = make([]bool, n)
		pp.reservedBy = make([]queue.Key, n)
	}
	pp.Free.Blocked[i], pp.reservedBy[i] = true, key
}

// unblockOwn lifts, for key's own checks, the block on the nodes reserved
// for it, and returns them.
func (pp *passPlacement) unblockOwn(key queue.Key) []int {
	if pp.Free.Blocked == nil {
		return nil
	}
	var own []int
	for i, k := range pp.reservedBy {
		if k == key {
			pp.Free.Blocked[i] = false
			own = append(own, i)
		}
	}
	return own
}

func (pp *passPlacement) reblock(own []int, key queue.Key) {
	for _, i := range own {
		pp.block(i, key)
	}
}
