package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// cpu is a one-resource amount.
func cpu(milli int64) []int64 { return []int64{milli} }

// node builds a node with cpu allocatable alloc and free, in the given domains.
func node(alloc, free int64, siblings int, domains ...string) Node {
	return Node{Domains: domains, Allocatable: cpu(alloc), Free: cpu(free), Siblings: siblings}
}

func TestScore(t *testing.T) {
	half := Weights{Packing: 0.5}
	tests := []struct {
		name    string
		gang    Gang
		nodes   []Node
		keys    int
		w       Weights
		better  int // index of the node that must score higher...
		worse   int // ...than this one
		equal   bool
		wantMax int64 // when > 0, the score of nodes[better]
	}{
		{
			name: "placed members pull the next into their rack",
			gang: Gang{Request: cpu(1000), Remaining: 4}, keys: 1, w: half,
			nodes:  []Node{node(8000, 4000, 0, "r1"), node(8000, 4000, 4, "r1"), node(8000, 8000, 0, "r2")},
			better: 0, worse: 2,
		},
		{
			name: "the first member starts in the rack that holds the whole gang",
			gang: Gang{Request: cpu(1000), Remaining: 8}, keys: 1, w: Weights{},
			// r1 has room for 8 (two nodes of 4), r2 for 6 on one node.
			nodes:  []Node{node(8000, 4000, 0, "r1"), node(8000, 4000, 0, "r1"), node(8000, 6000, 0, "r2")},
			better: 0, worse: 2,
		},
		{
			name: "between racks that both fit, the one with more room",
			gang: Gang{Request: cpu(1000), Remaining: 2}, keys: 1, w: Weights{},
			nodes:  []Node{node(8000, 2000, 0, "small"), node(8000, 8000, 0, "big")},
			better: 1, worse: 0,
		},
		{
			name: "the first key outranks the second",
			gang: Gang{Request: cpu(1000), Remaining: 2}, keys: 2, w: Weights{},
			nodes: []Node{
				node(8000, 8000, 2, "r1", "z1"),
				node(8000, 8000, 0, "r1", "z2"), // same rack, other zone
				node(8000, 8000, 0, "r2", "z1"), // other rack, same zone
			},
			better: 1, worse: 2,
		},
		{
			name: "without topology labels packing decides: the fuller node that still fits",
			gang: Gang{Request: cpu(1000), Remaining: 2}, keys: 1, w: half,
			nodes:  []Node{node(8000, 2000, 0), node(8000, 8000, 0)},
			better: 0, worse: 1,
		},
		{
			name: "packing prefers a node that takes more of the remaining gang",
			gang: Gang{Request: cpu(1000), Remaining: 8}, keys: 0, w: Weights{Packing: 1},
			nodes:  []Node{node(8000, 8000, 0), node(8000, 2000, 0)},
			better: 0, worse: 1,
		},
		{
			name: "a node that cannot take the member gets no packing score",
			gang: Gang{Request: cpu(3000), Remaining: 1}, keys: 0, w: Weights{Packing: 1},
			nodes:  []Node{node(8000, 3000, 0), node(8000, 2000, 0)},
			better: 0, worse: 1, wantMax: 100,
		},
		{
			name: "no keys and no packing: neutral",
			gang: Gang{Request: cpu(1000), Remaining: 2}, keys: 0, w: Weights{},
			nodes: []Node{node(8000, 2000, 0), node(8000, 8000, 0)},
			equal: true,
		},
		{
			name: "unlabelled nodes get no locality",
			gang: Gang{Request: cpu(1000), Remaining: 2}, keys: 1, w: Weights{},
			nodes:  []Node{node(8000, 8000, 0, "r1"), node(8000, 8000, 0, "")},
			better: 0, worse: 1,
		},
		{
			name: "remaining below 1 counts as 1",
			gang: Gang{Request: cpu(1000), Remaining: 0}, keys: 1, w: half,
			nodes:  []Node{node(8000, 1000, 0, "r1"), node(8000, 0, 0, "r2")},
			better: 0, worse: 1, wantMax: 100,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScorer(tc.gang, tc.nodes, tc.keys, tc.w)
			scores := make([]int64, len(tc.nodes))
			for i, n := range tc.nodes {
				scores[i] = s.Score(n)
				if scores[i] < 0 || scores[i] > MaxScore {
					t.Fatalf("score %d of node %d out of range", scores[i], i)
				}
			}
			if tc.equal {
				for _, v := range scores {
					if v != scores[0] {
						t.Fatalf("scores %v, want all equal", scores)
					}
				}
				return
			}
			if scores[tc.better] <= scores[tc.worse] {
				t.Fatalf("scores %v: node %d should beat node %d", scores, tc.better, tc.worse)
			}
			if tc.wantMax > 0 && scores[tc.better] != tc.wantMax {
				t.Fatalf("scores %v: node %d scores %d, want %d", scores, tc.better, scores[tc.better], tc.wantMax)
			}
		})
	}
}

func TestFits(t *testing.T) {
	for _, tc := range []struct {
		req, free []int64
		want      int
	}{
		{cpu(1000), cpu(3500), 3},
		{cpu(1000), cpu(500), 0},
		{[]int64{1000, 4}, []int64{8000, 8}, 2},
		{[]int64{0, 1}, cpu(8000), 0}, // a resource the node lacks
		{nil, cpu(1), 1<<31 - 1},
	} {
		if got := Fits(tc.req, tc.free); got != tc.want {
			t.Errorf("Fits(%v, %v) = %d, want %d", tc.req, tc.free, got, tc.want)
		}
	}
}

// TestSiblingNodesSuffice: once a sibling is placed, a scorer summarized from
// only the nodes that hold siblings scores every node as one summarized from
// all nodes; the plugin relies on it to summarize O(gang) nodes per member
// instead of every node.
func TestSiblingNodesSuffice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		keys := rng.IntN(3)
		var nodes, withSiblings []Node
		for range 1 + rng.IntN(40) {
			n := Node{Allocatable: []int64{8000, 64}, Free: []int64{rng.Int64N(8001), rng.Int64N(65)}}
			for k := range keys {
				d := ""
				if rng.IntN(5) > 0 { // some nodes lack the label
					d = fmt.Sprint("d", k, "-", rng.IntN(4))
				}
				n.Domains = append(n.Domains, d)
			}
			if rng.IntN(3) == 0 {
				n.Siblings = 1 + rng.IntN(3)
				withSiblings = append(withSiblings, n)
			}
			nodes = append(nodes, n)
		}
		if len(withSiblings) == 0 {
			continue
		}
		g := Gang{Request: []int64{500 + rng.Int64N(2000), rng.Int64N(4)}, Remaining: 1 + rng.IntN(10)}
		w := Weights{Packing: rng.Float64()}
		full, partial := NewScorer(g, nodes, keys, w), NewScorer(g, withSiblings, keys, w)
		for i, n := range nodes {
			if a, b := full.Score(n), partial.Score(n); a != b {
				t.Fatalf("trial %d, node %d: score from all nodes %d, from the siblings' nodes %d", trial, i, a, b)
			}
		}
	}
}

// TestUnreadDomainsDoNotMatter: a node scores the same with its domain left
// "" for every key the scorer does not read (ReadsDomain), with and without
// siblings placed, and with keys no node is labelled with.
func TestUnreadDomainsDoNotMatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	unread := 0
	for trial := range 300 {
		keys := 1 + rng.IntN(3)
		labelled := rng.IntN(keys + 1) // keys from this one on label no node
		var nodes []Node
		for range 1 + rng.IntN(30) {
			n := Node{Allocatable: []int64{8000}, Free: []int64{rng.Int64N(8001)}}
			for k := range keys {
				d := ""
				if k < labelled && rng.IntN(4) > 0 {
					d = fmt.Sprint("d", k, "-", rng.IntN(3))
				}
				n.Domains = append(n.Domains, d)
			}
			if rng.IntN(4) == 0 && trial%2 == 0 { // odd trials: a first member
				n.Siblings = 1 + rng.IntN(2)
			}
			nodes = append(nodes, n)
		}
		s := NewScorer(Gang{Request: []int64{500 + rng.Int64N(2000)}, Remaining: 1 + rng.IntN(8)}, nodes, keys, Weights{Packing: rng.Float64()})
		// A candidate node that was not summarized, in any domain.
		cand := Node{Allocatable: []int64{8000}, Free: []int64{rng.Int64N(8001)}}
		for k := range keys {
			cand.Domains = append(cand.Domains, fmt.Sprint("d", k, "-", rng.IntN(3)))
		}
		for i, n := range append(nodes, cand) {
			blank := Node{Domains: slices.Clone(n.Domains), Allocatable: n.Allocatable, Free: n.Free}
			for k := range keys {
				if !s.ReadsDomain(k) {
					blank.Domains[k] = ""
					unread++
				}
			}
			if a, b := s.Score(n), s.Score(blank); a != b {
				t.Fatalf("trial %d, node %d: score %d, %d with unread domains blank", trial, i, a, b)
			}
		}
	}
	if unread == 0 {
		t.Fatal("no trial had a key the scorer does not read")
	}
}
