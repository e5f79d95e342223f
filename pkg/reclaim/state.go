package reclaim

import (
	"slices"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// state is the search's scratch: what is taken so far.
type state struct {
	in            Input
	mode          Mode
	candidates    []int            // eligible pods, by Input.Pods index
	eligibleNodes []int            // indexes of eligible nodes, in Input order
	free          []resources.List // per node: Free + freed by taken pods; nil until changed (see freeOf)
	taken         []bool           // per pod: taken (taken.go)
	nTaken        int              // pods taken
	spent         []int32          // per budget: disruptions the taken pods spend
	takenQ        map[string]resources.List
	takenG        []int32          // per gang id: its members taken
	broken        int              // gangs left between none and minMember (gangsIntact)
	groupPods     [][]int          // per gang id: its candidate pods
	running       []int32          // per gang id: running members (all, not only candidates)
	steps         []option         // taken options, in order
	opts          []option         // this round's options, best first
	singles       []option         // the single steps, best first; the same in both rounds
	byNode        [][]int32        // per node: indexes in opts of the options with a pod there (eligible nodes only)
	used          []resources.List // per node: what placed members use; nil when nothing
	placement     []int            // member -> node index (scratch)
	order         []int            // members by size, largest first

	// The bounded search's indexes (bound.go).
	eligibleAt     []bool           // per node: it is in eligibleNodes
	touched        marks            // nodes whose free changed since reset
	occupied       marks            // nodes where greedy placed a member
	reqs           []*request       // per member: its request's index, shared by equal requests
	nodeBound      []nodeBound      // per node: this round's static part of the bound
	covers         [][]int          // per node: the pods there that this round's options can take
	placedAt       []resources.List // scratch of place: what the members placed so far use
	placedOn       marks            // scratch of place: nodes in placedAt
	podNode        []int32          // per pod: its node's index in in.Nodes, -1 when unknown
	podEligible    []int32          // per pod: the first eligible node of its node's name, -1 for none
	podGroup       []int32          // per pod: its gang's dense id, -1 for none
	spareOf        []int32          // per gang id: spare
	gangCandidates []int32          // per gang id: its candidate pods
	round          int              // which round of search: 1 for single pods, 2 with whole gangs
	scratch        []int64          // scratch of bound
}

// newState indexes in for a search in mode: nodes by name, pods by node
// and gang, the candidates, and the preemptor's members by size.
func newState(in Input, mode Mode) *state {
	// Sized up front: grown one append at a time, these were a tenth of
	// a decision at 5000 nodes.
	s := &state{in: in, mode: mode, eligibleNodes: make([]int, 0, len(in.Nodes)), candidates: make([]int, 0, len(in.Pods))}
	keys, nCandidates := s.indexPods(s.indexNodes())
	s.indexGangs(keys, nCandidates)
	s.orderMembers()
	s.placement = make([]int, len(in.Preemptor.Members))
	s.eligibleAt = make([]bool, len(in.Nodes))
	for _, i := range s.eligibleNodes {
		s.eligibleAt[i] = true
	}
	s.indexRequests()
	s.placedAt = make([]resources.List, len(in.Nodes))
	s.placedOn.reset(len(in.Nodes))
	return s
}

// namedNode is a node name's first node and its first eligible node (-1
// for none), by index in Input.Nodes.
type namedNode struct{ first, eligible int32 }

// indexNodes fills eligibleNodes and returns each node name's namedNode:
// one map, read once per pod.
func (s *state) indexNodes() map[string]namedNode {
	byName := make(map[string]namedNode, len(s.in.Nodes))
	for i, n := range s.in.Nodes {
		e, dup := byName[n.Name]
		if !dup {
			e = namedNode{first: int32(i), eligible: -1}
		}
		if n.Eligible && e.eligible < 0 {
			e.eligible = int32(i)
			s.eligibleNodes = append(s.eligibleNodes, i)
		}
		byName[n.Name] = e
	}
	return byName
}

// indexPods gives each pod its node, its first eligible node and its gang,
// fills candidates and running (per gang id), and returns the gangs' keys
// and candidate counts by id. Gangs get dense ids, so that what is counted
// per gang while the pods are read goes to slices, and the maps are filled
// once a gang.
func (s *state) indexPods(byName map[string]namedNode) (keys []string, nCandidates []int32) {
	pods := s.in.Pods
	s.podNode = make([]int32, len(pods))
	s.podEligible = make([]int32, len(pods))
	s.podGroup = make([]int32, len(pods))
	gid := map[string]int32{}
	var running []int32
	for i := range pods {
		p := &pods[i]
		s.podNode[i], s.podEligible[i], s.podGroup[i] = -1, -1, -1
		if e, known := byName[p.Node]; known {
			s.podNode[i], s.podEligible[i] = e.first, e.eligible
		}
		if p.Group != "" {
			g, ok := gid[p.Group]
			if !ok {
				g = int32(len(keys))
				gid[p.Group] = g
				keys = append(keys, p.Group)
				running, nCandidates = append(running, 0), append(nCandidates, 0)
			}
			s.podGroup[i] = g
			running[g]++
		}
		if s.podNode[i] >= 0 && s.eligible(i) {
			s.candidates = append(s.candidates, i)
			if g := s.podGroup[i]; g >= 0 {
				nCandidates[g]++
			}
		}
	}
	s.running = running
	return keys, nCandidates
}

// indexGangs fills, per gang id, its candidate pods (groupPods, one
// backing array for all gangs), their count and its spare: how many of its
// running members may go alone.
func (s *state) indexGangs(keys []string, nCandidates []int32) {
	members := make([][]int, len(keys))
	backing := make([]int, 0, len(s.candidates))
	for g, n := range nCandidates {
		members[g] = backing[len(backing) : len(backing) : len(backing)+int(n)]
		backing = backing[:len(backing)+int(n)]
	}
	for _, i := range s.candidates {
		if g := s.podGroup[i]; g >= 0 {
			members[g] = append(members[g], i)
		}
	}
	s.groupPods = members
	s.spareOf = make([]int32, len(keys))
	s.gangCandidates = nCandidates
	for g, key := range keys {
		n := s.running[g]
		if gr := s.in.Groups[key]; gr.Whole {
			s.spareOf[g] = 0 // one victim: no pod goes alone
		} else if min := gr.MinMember; min <= 1 {
			s.spareOf[g] = n // a group of one: every pod may go
		} else {
			s.spareOf[g] = max(n-min, 0)
		}
	}
}

// orderMembers sorts the preemptor's members for first-fit decreasing: big
// members first (cpu, then memory, then the rest by name); ties keep the
// first member first.
func (s *state) orderMembers() {
	members := s.in.Preemptor.Members
	s.order = make([]int, len(members))
	for i := range s.order {
		s.order[i] = i
	}
	slices.SortStableFunc(s.order, func(a, b int) int {
		return compareRequests(members[b], members[a])
	})
}
