package reclaim

import (
	"slices"
	"strings"
	"testing"
)

// TestDecideDeficit: a preemptor admitted on room that evictions in its
// queue or subtree free fits the nodes already, yet its queue (or parent)
// would go past its capability; the plan must take that room from the
// queues the deficit names, wherever their pods run.
func TestDecideDeficit(t *testing.T) {
	set := func(qs ...string) map[string]bool {
		m := map[string]bool{}
		for _, q := range qs {
			m[q] = true
		}
		return m
	}
	tests := []struct {
		name     string
		in       Input
		wantMode Mode
		want     []string
		wantNode string
		wantWhy  string
	}{
		{
			// Queue a is at its capability with low-priority pods on n1;
			// n0 is empty. Without the deficit nothing is evicted.
			name: "own queue at capability: lower priority goes, the preemptor keeps its free node",
			in: Input{
				Preemptor: Preemptor{Queue: "a", Priority: 100, Members: members(1, 2000)},
				Queues:    map[string]Queue{"a": {Allocated: cpu(4000), Deserved: cpu(8000)}},
				Pods:      fill("a", "", 1, 2, 2000, "n1"),
				Nodes:     []Node{{Name: "n0", Free: cpu(4000), Eligible: true}, {Name: "n1", Free: cpu(0), Eligible: true}},
				Deficits:  []Deficit{{Queues: set("a"), Over: cpu(2000)}},
				Options:   both,
			},
			wantMode: Preempt, want: []string{"a/p-1"}, wantNode: "n0",
		},
		{
			// Parent p is at capability through sibling b's excess, which
			// runs on a node the preemptor may not use.
			name: "parent at capability: a sibling's excess goes from a node the preemptor cannot use",
			in: Input{
				Preemptor: Preemptor{Queue: "a", Priority: 1, Members: members(2, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(0), Deserved: cpu(4000), Reclaimable: true},
					"b": {Allocated: cpu(8000), Deserved: cpu(4000), Reclaimable: true},
				},
				Pods: fill("b", "", 1, 4, 2000, "n2"),
				Nodes: []Node{
					{Name: "n0", Free: cpu(4000), Eligible: true},
					{Name: "n2", Free: cpu(0), Eligible: false},
				},
				Deficits: []Deficit{{Queues: set("p", "a", "b"), Over: cpu(2000)}},
				Options:  both,
			},
			wantMode: Reclaim, want: []string{"b/p-3"}, wantNode: "n0",
		},
		{
			// b is at its deserved share: reclaim may not take it below.
			name: "no victim above its share: no plan",
			in: Input{
				Preemptor: Preemptor{Queue: "a", Priority: 1, Members: members(1, 2000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(0), Deserved: cpu(4000), Reclaimable: true},
					"b": {Allocated: cpu(4000), Deserved: cpu(4000), Reclaimable: true},
				},
				Pods:     fill("b", "", 1, 2, 2000, "n1"),
				Nodes:    nodesWith(4000, 0),
				Deficits: []Deficit{{Queues: set("p", "a", "b"), Over: cpu(2000)}},
				Options:  both,
			},
			wantWhy: "stay over their capability",
		},
		{
			// Victims outside the deficit's queues do not free it.
			name: "victims outside the subtree do not count",
			in: Input{
				Preemptor: Preemptor{Queue: "a", Priority: 1, Members: members(1, 2000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(0), Deserved: cpu(4000), Reclaimable: true},
					"c": {Allocated: cpu(8000), Deserved: cpu(4000), Reclaimable: true},
				},
				Pods:     fill("c", "", 1, 4, 2000, "n1"),
				Nodes:    nodesWith(4000, 0),
				Deficits: []Deficit{{Queues: set("p", "a", "b"), Over: cpu(2000)}},
				Options:  both,
			},
			wantWhy: "stay over their capability",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok, why := Decide(tt.in)
			if tt.wantWhy != "" {
				if ok || !strings.Contains(why, tt.wantWhy) {
					t.Fatalf("Decide = %v %v %q, want no plan because %q", p, ok, why, tt.wantWhy)
				}
				return
			}
			if !ok {
				t.Fatalf("Decide: no plan: %s", why)
			}
			if got := ids(tt.in, p); p.Mode != tt.wantMode || !slices.Equal(got, tt.want) || p.Node != tt.wantNode {
				t.Errorf("Decide = %v %v on %s, want %v %v on %s", p.Mode, got, p.Node, tt.wantMode, tt.want, tt.wantNode)
			}
		})
	}
}
