// Package placement scores nodes for a gang member: keep the gang in one
// topology domain (a rack, then a zone) when it fits there, and pack its
// members onto few nodes without stranding room. It is pure policy, with no
// Kubernetes imports; the CalderaGangPlacement plugin feeds it the
// scheduler's snapshot.
package placement

import (
	"math"
)

// MaxScore is the score of the best node.
const MaxScore = 100

// Node is a feasible or infeasible node as the scoring sees it.
type Node struct {
	// Domains holds the node's value for each topology key, in key order;
	// "" where the node lacks the label.
	Domains []string
	// Allocatable and Free (allocatable minus what the node's pods, assumed
	// ones included, request), for the resources of Gang.Request, in its
	// order: dense, so that summarizing every node allocates nothing.
	Allocatable, Free []int64
	// Siblings counts the gang's members placed on the node (bound, or
	// assumed and waiting for their siblings).
	Siblings int
}

// Gang is the member being scheduled and what is left of its gang.
type Gang struct {
	// Request is one member's request (the pod's), one amount per resource
	// the member asks for; Node amounts use the same order.
	Request []int64
	// Remaining counts the members still to place, this one included (>= 1).
	Remaining int
}

// Weights balance the two scores: Packing in [0, 1] is the packing share,
// the rest is locality.
type Weights struct {
	Packing float64
}

// Scorer holds what a scheduling cycle's nodes say about the gang: computed
// once (PreScore) from every node, then read per candidate node (Score).
type Scorer struct {
	gang    Gang
	w       Weights
	keys    int
	placed  int              // siblings placed anywhere
	domains []map[string]int // per key: domain -> siblings there
	room    []map[string]int // per key: domain -> members that fit there
	maxRoom []int            // per key: the largest room of a domain
}

// NewScorer summarizes nodes for g (more can be added with Add). For the
// first member of a gang (no sibling placed) every node must be added, not
// only the feasible ones: a domain's room counts every node in it. Once
// siblings are placed, the score reads only the domains of the nodes that
// hold them, so summarizing those nodes alone scores every node the same.
func NewScorer(g Gang, nodes []Node, keys int, w Weights) *Scorer {
	s := &Scorer{gang: g, w: w, keys: keys,
		domains: make([]map[string]int, keys), room: make([]map[string]int, keys), maxRoom: make([]int, keys)}
	if s.gang.Remaining < 1 {
		s.gang.Remaining = 1
	}
	for i := range keys {
		s.domains[i], s.room[i] = map[string]int{}, map[string]int{}
	}
	for _, n := range nodes {
		s.Add(n)
	}
	return s
}

// Add summarizes one more node. O(keys x resources); n is not retained.
func (s *Scorer) Add(n Node) {
	s.placed += n.Siblings
	fit := Fits(s.gang.Request, n.Free)
	for i := range min(s.keys, len(n.Domains)) {
		d := n.Domains[i]
		if d == "" {
			continue
		}
		if n.Siblings > 0 {
			s.domains[i][d] += n.Siblings
		}
		s.room[i][d] = satAdd(s.room[i][d], fit)
		s.maxRoom[i] = max(s.maxRoom[i], s.room[i][d])
	}
}

// ReadsDomain says whether Score reads a node's domain for key i: not when
// no summarized node has that key's label, nor, once siblings are placed,
// when none of them is in a domain of that key. Score gives the same for a
// node whose domain for such a key is left "", which saves reading the
// label on every candidate node.
func (s *Scorer) ReadsDomain(i int) bool {
	if s.placed > 0 {
		return len(s.domains[i]) > 0
	}
	return len(s.room[i]) > 0
}

// Score returns n's score in [0, MaxScore].
func (s *Scorer) Score(n Node) int64 {
	p := min(max(s.w.Packing, 0), 1)
	v := (1-p)*s.locality(n) + p*s.packing(n)
	return int64(math.Round(v * MaxScore))
}

// locality is in [0, 1]: the first key weighs as much as all later ones
// together (1/2, 1/4, ... normalized), so a rack outranks a zone. For a key,
// once members are placed it is the share of them in n's domain; for the
// first member it is how much of the remaining gang n's domain can hold
// (1 when all of it), with a tenth of the weight going to the domain with
// the most room, so the gang starts where it will not be split.
func (s *Scorer) locality(n Node) float64 {
	if s.keys == 0 {
		return 0
	}
	var sum, total float64
	w := 1.0
	for i := range s.keys {
		total += w
		d := ""
		if i < len(n.Domains) {
			d = n.Domains[i]
		}
		if d != "" {
			if s.placed > 0 {
				sum += w * float64(s.domains[i][d]) / float64(s.placed)
			} else {
				r := s.room[i][d]
				v := 0.9 * float64(min(r, s.gang.Remaining)) / float64(s.gang.Remaining)
				if s.maxRoom[i] > 0 {
					v += 0.1 * float64(r) / float64(s.maxRoom[i])
				}
				sum += w * v
			}
		}
		w /= 2
	}
	return sum / total
}

// packing is in [0, 1]: half for how many of the remaining members n can
// take (fewer nodes touched), half for how little of n's room those members
// leave unused, on the resource the member needs most of n (less stranded
// capacity). A node that cannot take the member scores 0.
func (s *Scorer) packing(n Node) float64 {
	take := min(Fits(s.gang.Request, n.Free), s.gang.Remaining)
	if take == 0 {
		return 0
	}
	many := float64(take) / float64(s.gang.Remaining)
	// The dominant resource: the largest share of allocatable one member asks.
	k := -1
	best := -1.0
	for r, v := range s.gang.Request {
		if a := at(n.Allocatable, r); v > 0 && a > 0 {
			if f := float64(v) / float64(a); f > best {
				k, best = r, f
			}
		}
	}
	full := 1.0
	if k >= 0 {
		left := at(n.Free, k) - int64(take)*s.gang.Request[k]
		full = 1 - float64(max(left, 0))/float64(n.Allocatable[k])
	}
	return 0.5*many + 0.5*full
}

// Fits returns how many copies of req fit in free, both in the same
// resource order (0 when any requested resource is short; a large number
// when req requests nothing).
func Fits(req, free []int64) int {
	n := math.MaxInt32
	for k, v := range req {
		if v <= 0 {
			continue
		}
		f := at(free, k)
		if f < v {
			return 0
		}
		n = min(n, int(min(f/v, math.MaxInt32)))
	}
	return n
}

func satAdd(a, b int) int {
	if a > math.MaxInt32-b {
		return math.MaxInt32
	}
	return a + b
}

// at is l[i], 0 past the end.
func at(l []int64, i int) int64 {
	if i < len(l) {
		return l[i]
	}
	return 0
}
