package reclaim

import (
	"cmp"
	"slices"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// The search places each member on the first node with room, else on the
// node where makeRoom finds the cheapest victims (the first such node on a
// tie). Trying makeRoom on every node made a decision grow with nodes x
// members x victims per node: 350 ms at 5000 nodes. Two indexes keep it to
// the few nodes that can matter, with the same answer:
//
//   - first fit: the nodes whose Free holds a member's request are listed
//     once per request; only nodes whose room changed since (victims taken
//     there, members placed there) are checked again;
//   - cheapest victims: every node has a lower bound on the cost makeRoom
//     can find there (cheaper's order: no budget broken, the fewest pods
//     that can free the room, the lowest priority among its options, the
//     youngest of them), and nodes are tried in order of bound, stopping
//     once the next bound is above the best cost found (or equal to it on
//     a later node, which loses the tie).
//
// makeRoom leaves the state as it found it, so which nodes it is tried on
// does not change what it finds on the others. TestDecideEquivalence holds
// the decisions to the exhaustive search's.

// greedy places every member, taking victims where needed; false when a
// member finds no node.
func (s *state) greedy() bool {
	for _, m := range s.order {
		req := s.in.Preemptor.Members[m]
		at := s.firstFit(m, &s.occupied, s.used)
		if at < 0 {
			var best []option
			if at, best = s.cheapest(m); at < 0 {
				return false
			}
			for _, o := range best {
				s.take(o)
			}
		}
		if s.used[at] == nil {
			s.occupied.add(at)
		}
		s.used[at] = s.used[at].Add(req)
		s.placement[m] = at
	}
	return true
}

// roomFor: req fits node i's free room minus use (the members placed there).
func (s *state) roomFor(i int, req, use resources.List) bool {
	free := s.freeOf(i)
	for k, v := range req {
		if v > 0 && v > free[k]-use[k] {
			return false
		}
	}
	return true
}

// firstFit returns the first eligible node, in Input order, where member
// m's request fits the free room minus use, or -1. Nodes in busy hold use.
func (s *state) firstFit(m int, busy *marks, use []resources.List) int {
	req := s.in.Preemptor.Members[m]
	at := -1
	// A node untouched since reset, with nothing placed: its room is its
	// Free, so the request's list says whether it fits.
	for _, i := range s.reqs[m].fits {
		if !s.touched.has(i) && !busy.has(i) {
			at = i
			break
		}
	}
	check := func(i int) {
		if (at < 0 || i < at) && s.eligibleAt[i] && s.roomFor(i, req, use[i]) {
			at = i
		}
	}
	for _, i := range s.touched.list {
		check(i)
	}
	for _, i := range busy.list {
		check(i)
	}
	return at
}

// makeRoom finds the options on node i whose eviction makes room for req:
// the node's options in preference order until req fits, then back to
// front, each one the room can do without is given back. Nothing stays
// taken; the caller takes the answer.
func (s *state) makeRoom(i int, req resources.List) ([]option, bool) {
	var got []option
	fit, n0 := false, len(s.steps)
	// Options that break no disruption budget go first; those that would
	// take a budget below zero (given what is taken by then) only when the
	// others do not make room. So of a budget that allows one disruption,
	// one pod goes before any other pod it covers is considered.
	for pass := 0; pass < 2 && !fit; pass++ {
		for _, j := range s.byNode[i] {
			o := s.opts[j]
			if pass == 0 && s.violations(o.pods) > 0 {
				continue
			}
			if s.take(o) {
				got = append(got, s.steps[len(s.steps)-1])
				if fit = s.roomFor(i, req, s.used[i]); fit {
					break
				}
			}
		}
	}
	if fit {
		for j := len(got) - 1; j >= 0; j-- {
			s.untake(got[j].pods)
			if s.roomFor(i, req, s.used[i]) && s.gangsIntact() {
				got = slices.Delete(got, j, j+1)
				continue
			}
			s.retake(got[j].pods)
		}
	}
	for _, o := range got {
		s.untake(o.pods)
	}
	s.steps = s.steps[:n0]
	return got, fit
}

// cost is how cheaper ranks a set of victims: budgets broken, pods, the
// highest priority, then the earliest start (later is cheaper).
type cost struct {
	disruptive, pods int
	priority         int32
	earliest         time.Time
}

func costOf(opts []option) cost {
	n, d, p, e := summarize(opts)
	return cost{disruptive: d, pods: n, priority: p, earliest: e}
}

// compareCosts is cheaper as a comparison: negative when a is cheaper.
func compareCosts(a, b cost) int {
	if c := cmp.Compare(a.disruptive, b.disruptive); c != 0 {
		return c
	}
	if c := cmp.Compare(a.pods, b.pods); c != 0 {
		return c
	}
	if c := cmp.Compare(a.priority, b.priority); c != 0 {
		return c
	}
	return b.earliest.Compare(a.earliest)
}

// nodeBound is the part of a node's bound that holds for the whole round:
// makeRoom takes at least one of the node's options, so its victims'
// highest priority is at least the lowest among them, and their earliest
// start at most the latest among them.
type nodeBound struct {
	options  bool // the node has options; without, makeRoom finds nothing
	priority int32
	earliest time.Time
}

// boundNodes computes this round's nodeBound of every node.
func (s *state) boundNodes() {
	s.nodeBound = make([]nodeBound, len(s.in.Nodes))
	for i, js := range s.byNode {
		for n, j := range js {
			o := s.opts[j]
			b := &s.nodeBound[i]
			if n == 0 {
				*b = nodeBound{options: true, priority: o.priority, earliest: o.earliest}
				continue
			}
			b.priority = min(b.priority, o.priority)
			if o.earliest.After(b.earliest) {
				b.earliest = o.earliest
			}
		}
	}
}

// bound is a lower bound on the cost of what makeRoom(i, req) finds, in
// the current state; false when it can find nothing (the pods there that
// the options can take do not free enough of some resource). The pods
// count is the fewest of those pods whose requests add up to what the node
// lacks of each resource, and at least the unit (unitOf) of the cheapest of
// them that frees some of it. clean computes it for the node as reset left
// it: its Free, no member placed, none of its pods taken.
func (s *state) bound(i int, req resources.List, clean bool) (cost, bool) {
	nb := s.nodeBound[i]
	if !nb.options {
		return cost{}, false
	}
	free, use := s.in.Nodes[i].Free, resources.List(nil)
	if !clean {
		free, use = s.freeOf(i), s.used[i]
	}
	pods := 1
	for k, v := range req {
		lack := v - (free[k] - use[k])
		if v <= 0 || lack <= 0 {
			continue
		}
		vals, unit := s.scratch[:0], 1
		for _, p := range s.covers[i] {
			if r := s.in.Pods[p].Request[k]; r > 0 && (clean || !s.taken[p]) {
				vals = append(vals, r)
				if u := s.unitOf(p); len(vals) == 1 || u < unit {
					unit = u
				}
			}
		}
		slices.Sort(vals)
		n, freed := 0, int64(0)
		for j := len(vals) - 1; j >= 0 && freed < lack; j-- {
			freed += vals[j]
			n++
		}
		s.scratch = vals
		if freed < lack {
			return cost{}, false
		}
		pods = max(pods, n, unit)
	}
	return cost{pods: pods, priority: nb.priority, earliest: nb.earliest}, true
}

// unitOf is the fewest pods makeRoom takes with pod p: the gang's candidate
// pods when the gang has no spare members, else p alone. A gang without
// spare members is offered only as its whole option, whose step takes all
// of its pods at once and is given back whole, so its pods are taken all
// or none. Whatever makeRoom keeps must free some of a resource the node
// lacks, so it keeps one of the pods counted in bound and its unit:
// without this, every node of W7 (full of whole gangs of 8) had a bound of
// one pod, below the 8 that makeRoom finds anywhere, and was tried.
func (s *state) unitOf(p int) int {
	if g := s.podGroup[p]; g >= 0 && s.spareOf[g] == 0 {
		return int(s.gangCandidates[g])
	}
	return 1
}

// candidate is a node to try makeRoom on, with its bound.
type candidate struct {
	node  int
	bound cost
}

func compareCandidates(a, b candidate) int {
	if c := compareCosts(a.bound, b.bound); c != 0 {
		return c
	}
	return cmp.Compare(a.node, b.node)
}

// cheapest returns the node where makeRoom finds the cheapest victims for
// member m, the first such node on a tie, and the victims; -1 when no node
// has room to make. Called only when no node has room already.
func (s *state) cheapest(m int) (int, []option) {
	req := s.in.Preemptor.Members[m]
	clean := s.cleanOrder(m)
	next := 0 // clean's next candidate
	var changed []candidate
	seen := map[int]bool{}
	for _, list := range [][]int{s.touched.list, s.occupied.list} {
		for _, i := range list {
			if !seen[i] && s.eligibleAt[i] {
				seen[i] = true
				if b, ok := s.bound(i, req, false); ok {
					changed = append(changed, candidate{i, b})
				}
			}
		}
	}
	slices.SortFunc(changed, compareCandidates)
	at, best, bestCost := -1, []option(nil), cost{}
	for {
		cc, more := clean.at(next)
		for more && seen[cc.node] {
			next++ // its bound is among changed
			cc, more = clean.at(next)
		}
		var c candidate
		switch {
		case more && (len(changed) == 0 || compareCandidates(cc, changed[0]) < 0):
			c = cc
			next++
		case len(changed) > 0:
			c, changed = changed[0], changed[1:]
		default:
			return at, best
		}
		if at >= 0 {
			if d := compareCosts(c.bound, bestCost); d > 0 || d == 0 && c.node > at {
				return at, best // no node left can be cheaper, nor as cheap and first
			}
		}
		opts, ok := s.makeRoom(c.node, req)
		if !ok {
			continue
		}
		if k := costOf(opts); at < 0 || compareCosts(k, bestCost) < 0 || compareCosts(k, bestCost) == 0 && c.node < at {
			at, best, bestCost = c.node, opts, k
		}
	}
}

// request indexes the nodes for one member's request; members with equal
// requests share it.
type request struct {
	req   resources.List
	fits  []int // eligible nodes whose Free holds req, in Input order
	round int   // the round order was computed for; 0 for none
	// order and rest are the eligible nodes where room can be made, by
	// their bound as reset left them (clean.go): order the first ones in
	// order, rest a heap of the others.
	order, rest []candidate
}

// indexRequests fills s.reqs.
func (s *state) indexRequests() {
	s.reqs = make([]*request, len(s.in.Preemptor.Members))
	var distinct []*request
	for m, req := range s.in.Preemptor.Members {
		for _, r := range distinct {
			if r.req.Equal(req) {
				s.reqs[m] = r
				break
			}
		}
		if s.reqs[m] != nil {
			continue
		}
		r := &request{req: req}
		for _, i := range s.eligibleNodes {
			if req.FitsIn(s.in.Nodes[i].Free) {
				r.fits = append(r.fits, i)
			}
		}
		distinct = append(distinct, r)
		s.reqs[m] = r
	}
}

// marks is a set of node indexes that lists its members.
type marks struct {
	on   []bool
	list []int
}

func (m *marks) reset(n int) {
	if len(m.on) != n {
		m.on = make([]bool, n)
	}
	for _, i := range m.list {
		m.on[i] = false
	}
	m.list = m.list[:0]
}

func (m *marks) add(i int) {
	if !m.on[i] {
		m.on[i] = true
		m.list = append(m.list, i)
	}
}

func (m *marks) has(i int) bool { return m.on[i] }
