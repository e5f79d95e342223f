package placement

import "testing"

// TestWorkedExample pins the numbers of docs/placement.md's worked example.
func TestWorkedExample(t *testing.T) {
	w := Weights{Packing: 0.5}
	racks := []string{"r1", "r1", "r1", "r2", "r2", "r2", "r3", "r3", "r3"}
	nodes := func(placedOnN4 int) []Node {
		out := make([]Node, len(racks))
		for i, r := range racks {
			out[i] = node(4000, 4000, 0, r)
		}
		out[0].Free = cpu(1000) // n1 runs 3 cpu of other work
		out[3].Free = cpu(4000 - int64(placedOnN4)*1000)
		out[3].Siblings = placedOnN4
		return out
	}
	score := func(ns []Node, remaining int) []int64 {
		s := NewScorer(Gang{Request: cpu(1000), Remaining: remaining}, ns, 1, w)
		out := make([]int64, len(ns))
		for i, n := range ns {
			out[i] = s.Score(n)
		}
		return out
	}
	first := score(nodes(0), 8)
	t.Logf("first member: %v", first)
	want := []int64{77, 86, 86, 88, 88, 88, 88, 88, 88}
	for i := range want {
		if first[i] != want[i] {
			t.Fatalf("first member scores %v, want %v", first, want)
		}
	}
	second := score(nodes(1), 7)
	t.Logf("second member: %v", second)
	want = []int64{29, 39, 39, 86, 89, 89, 39, 39, 39}
	for i := range want {
		if second[i] != want[i] {
			t.Fatalf("second member scores %v, want %v", second, want)
		}
	}
}
