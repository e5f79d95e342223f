package placement

import (
	"math"
	"slices"
)

// Class is a set of identical gang members: the same request and the same
// eligible nodes. Members built from one pod template share a class, so a
// placement costs O(classes x nodes), not O(members x nodes).
type Class struct {
	// Request is one member's request, one amount per resource in the
	// Room's order.
	Request []int64
	// Count is how many members the class has.
	Count int
	// Nodes lists the indexes of the nodes the members may use, ascending;
	// nil means every node. (Eligibility, node selectors, affinity and
	// taints, is decided by the caller: this package reads no Kubernetes
	// objects.)
	Nodes []int32
	// Start is where in the node list (Nodes, or every node) the search
	// begins: the caller knows the nodes before it have no room for
	// Request (an earlier Place's First said so, and room has only
	// shrunk since). 0 searches them all.
	Start int
}

// Room is the free room of a set of nodes, dense: node i's free amount of
// resource j is Free[i*R+j]. Amounts may be negative (room promised to
// members not bound yet); nothing fits there.
type Room struct {
	// R is the number of resources per node.
	R int
	// Free holds len(Free)/R nodes' free vectors.
	Free []int64
	// Blocked, when not nil, marks nodes reserved for another group
	// (Blocked[i] true): nothing is placed there.
	Blocked []bool
	// Max, when not nil, bounds every node's free amount per resource
	// from above (a bound that placements made since only loosen): a
	// member asking more than Max fits nowhere, and no node is visited.
	Max []int64
}

// Nodes returns the number of nodes in the room.
func (r *Room) Nodes() int {
	if r.R == 0 {
		return 0
	}
	return len(r.Free) / r.R
}

// Step is one member placed: its class and its node.
type Step struct {
	Class, Node int32
}

// Placer places classes of members first-fit-decreasing. It keeps scratch
// space between calls, so a steady stream of checks allocates nothing; it is
// not safe for concurrent use.
type Placer struct {
	order []int
	size  []float64
	big   []int64
	steps []Step
	// First holds, after Place, per class, the position in its node list
	// where its first member was placed (or the list's length when none
	// fit): a later Place of the same request on the same nodes, with room
	// only shrunk since, may Start there.
	First []int
}

// Place puts as many of the classes' members as it can into room,
// first-fit-decreasing: classes by their largest share of the largest
// node's room on any resource, larger first; each member on the first
// eligible node (in index order) where it fits. It takes the members' room
// from room.Free and returns how many it placed and the steps it took
// (valid until the next call), so the caller can Undo them or apply them
// to another Room. All members fit exactly when placed equals the sum of the
// Counts.
//
// First-fit-decreasing is a heuristic: a "no" may be wrong (an exact answer
// is NP-hard), a "yes" never is, since the steps are a placement. Members of
// one class are placed together and the next one starts at the node the
// previous one took (the nodes before it had no room then and have less
// now), so a class costs O(nodes + members) node visits.
func (p *Placer) Place(room *Room, classes []Class) (placed int, steps []Step) {
	p.steps = p.steps[:0]
	p.First = p.First[:0]
	for _, c := range classes {
		p.First = append(p.First, c.Start)
	}
	if room.R == 0 {
		for _, c := range classes {
			placed += c.Count
		}
		return placed, p.steps
	}
	p.orderBySize(room, classes)
	for _, ci := range p.order {
		placed += p.placeClass(room, classes, ci)
	}
	return placed, p.steps
}

// orderBySize sets p.order to the classes' indexes, largest first: a
// class's size is its largest share, on any resource, of the largest free
// amount of that resource, so a member large on a scarce resource goes
// first. Equal sizes keep the caller's order; one class needs no sizes.
func (p *Placer) orderBySize(room *Room, classes []Class) {
	p.size = p.size[:0]
	p.order = p.order[:0]
	if len(classes) > 1 {
		p.largestFree(room)
	}
	for ci, c := range classes {
		s := 0.0
		for j, v := range c.Request {
			if v <= 0 || j >= room.R || len(classes) == 1 {
				continue
			}
			s = math.Max(s, float64(v)/float64(p.big[j]))
		}
		p.size = append(p.size, s)
		p.order = append(p.order, ci)
	}
	slices.SortStableFunc(p.order, func(a, b int) int {
		switch {
		case p.size[a] > p.size[b]:
			return -1
		case p.size[a] < p.size[b]:
			return 1
		}
		return 0
	})
}

// largestFree sets p.big to the largest free amount of each resource over
// room's nodes, at least 1 so that it can divide.
func (p *Placer) largestFree(room *Room) {
	n := room.Nodes()
	p.big = p.big[:0]
	for j := 0; j < room.R; j++ {
		big := int64(1)
		for i := 0; i < n; i++ {
			big = max(big, room.Free[i*room.R+j])
		}
		p.big = append(p.big, big)
	}
}

// placeClass places class ci's members first-fit, from its Start on, and
// records in First where the first one went; it returns how many it
// placed. Each member starts at the node the previous one took: the nodes
// before it had no room then and have less now.
func (p *Placer) placeClass(room *Room, classes []Class, ci int) (placed int) {
	c := classes[ci]
	n := room.Nodes()
	count := n
	if c.Nodes != nil {
		count = len(c.Nodes)
	}
	if room.Max != nil && !fitsAt(c.Request, room.Max) {
		p.First[ci] = count
		return 0
	}
	k := min(max(c.Start, 0), count) // position in the class's node list
	for m := 0; m < c.Count; m++ {
		for ; k < count; k++ {
			i := k
			if c.Nodes != nil {
				i = int(c.Nodes[k])
			}
			if i >= n || (room.Blocked != nil && room.Blocked[i]) {
				continue
			}
			if fitsAt(c.Request, room.Free[i*room.R:(i+1)*room.R]) {
				take(c.Request, room.Free[i*room.R:(i+1)*room.R], -1)
				p.steps = append(p.steps, Step{Class: int32(ci), Node: int32(i)})
				if m == 0 {
					p.First[ci] = k
				}
				placed++
				break
			}
		}
		if k == count {
			if m == 0 {
				p.First[ci] = count
			}
			break // no node left for this class: nor for its other members
		}
	}
	return placed
}

// Undo gives back to room what steps (from Place over classes) took.
func Undo(room *Room, classes []Class, steps []Step) {
	for _, s := range steps {
		i := int(s.Node)
		take(classes[s.Class].Request, room.Free[i*room.R:(i+1)*room.R], 1)
	}
}

// Apply takes from room what steps (from Place over classes, possibly on
// another Room with the same nodes) placed; amounts may go negative.
func Apply(room *Room, classes []Class, steps []Step) {
	for _, s := range steps {
		i := int(s.Node)
		take(classes[s.Class].Request, room.Free[i*room.R:(i+1)*room.R], -1)
	}
}

// Feasible reports whether every member of classes can be placed on room,
// first-fit-decreasing, and how many fit; room is left unchanged. It is the
// one gang-feasibility question admission asks ("can these minMember
// members be placed together on this room?").
func (p *Placer) Feasible(room *Room, classes []Class) (ok bool, fit, want int) {
	for _, c := range classes {
		want += c.Count
	}
	fit, steps := p.Place(room, classes)
	Undo(room, classes, steps)
	return fit == want, fit, want
}

func fitsAt(req, free []int64) bool {
	for j, v := range req {
		if v > 0 && (j >= len(free) || free[j] < v) {
			return false
		}
	}
	return true
}

// take adds sign x req to free.
func take(req, free []int64, sign int64) {
	for j, v := range req {
		if v > 0 && j < len(free) {
			free[j] += sign * v
		}
	}
}
