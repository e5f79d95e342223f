package reclaim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cpu(milli int64) resources.List { return resources.List{resources.CPU: milli} }

// fill returns n pods of queue q with req cpu each, spread round-robin over
// nodes, the i-th started at t0+i minutes (so the last is the youngest).
func fill(q, group string, prio int32, n int, req int64, nodes ...string) []Pod {
	out := make([]Pod, n)
	for i := range out {
		out[i] = Pod{
			ID: fmt.Sprintf("%s/%s-%d", q, cmpOr(group, "p"), i), Node: nodes[i%len(nodes)],
			Group: group, Queue: q, Priority: prio, Started: t0.Add(time.Duration(i) * time.Minute),
			Request: cpu(req),
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// nodesWith returns eligible nodes with free cpu as given.
func nodesWith(free ...int64) []Node {
	out := make([]Node, len(free))
	for i, f := range free {
		out[i] = Node{Name: fmt.Sprintf("n%d", i), Free: cpu(f), Eligible: true}
	}
	return out
}

func members(n int, req int64) []resources.List {
	out := make([]resources.List, n)
	for i := range out {
		out[i] = cpu(req)
	}
	return out
}

func ids(in Input, p Plan) []string {
	out := make([]string, len(p.Victims))
	for i, v := range p.Victims {
		out[i] = in.Pods[v].ID
	}
	slices.Sort(out)
	return out
}

var both = Options{Reclaim: true, Preempt: true, Now: t0.Add(time.Hour)}

func TestDecide(t *testing.T) {
	// Queue a holds 16 cpu on 4 full nodes; its fair share is 8.
	aOver := map[string]Queue{
		"a": {Allocated: cpu(16000), Deserved: cpu(8000), Reclaimable: true},
		"b": {Allocated: cpu(0), Deserved: cpu(8000), Reclaimable: true},
	}
	four := []string{"n0", "n1", "n2", "n3"}
	tests := []struct {
		name     string
		in       Input
		wantMode Mode
		want     []string // victim IDs, sorted; nil with wantMode None
		wantNode string
		wantWhy  string // substring of the reason when no plan
	}{
		{
			name: "reclaim takes the youngest pod of the queue above its share",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues:    aOver, Pods: fill("a", "", 0, 16, 1000, four...),
				Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			wantMode: Reclaim, want: []string{"a/p-15"}, wantNode: "n3",
		},
		{
			name: "a queue at its deserved share is not reclaimed",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(8000), Deserved: cpu(8000), Reclaimable: true},
					"b": {Allocated: cpu(7000), Deserved: cpu(8000), Reclaimable: true},
				},
				Pods: fill("a", "", 0, 8, 1000, "n0", "n1"), Nodes: nodesWith(0, 0), Options: both,
			},
			wantWhy: "does not fit even after evicting",
		},
		{
			name: "a queue is reclaimed down to its deserved share, not below",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(3, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(10000), Deserved: cpu(8000), Reclaimable: true},
					"b": {Allocated: cpu(0), Deserved: cpu(8000), Reclaimable: true},
				},
				Pods: fill("a", "", 0, 10, 1000, "n0", "n1"), Nodes: nodesWith(0, 0), Options: both,
			},
			wantWhy: "no reclaim: the whole group does not fit",
		},
		{
			name: "a non-reclaimable queue is never a victim",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(16000), Deserved: cpu(8000)},
					"b": {Deserved: cpu(8000), Reclaimable: true},
				},
				Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			wantWhy: "no reclaim: no eligible victims",
		},
		{
			name: "a guarantee is never reclaimed",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(16000), Deserved: cpu(8000), Guarantee: cpu(16000), Reclaimable: true},
					"b": {Deserved: cpu(8000), Reclaimable: true},
				},
				Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			wantWhy: "does not fit even after evicting",
		},
		{
			name: "a preemptor whose queue would exceed its share does not reclaim",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(8000), Deserved: cpu(8000), Reclaimable: true},
					"b": {Allocated: cpu(8000), Deserved: cpu(8000), Reclaimable: true},
				},
				Pods: fill("a", "", 0, 8, 1000, "n0", "n1"), Nodes: nodesWith(0, 0),
				Options: Options{Reclaim: true, Now: t0},
			},
			wantWhy: "no reclaim: queue b would exceed its deserved cpu (8 allocated + 1 requested > 8)",
		},
		{
			name: "a resource the queue has no share of blocks reclaim",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: []resources.List{{"nvidia.com/gpu": 1}}},
				Queues:    aOver, Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0),
				Options: Options{Reclaim: true, Now: t0},
			},
			wantWhy: "would exceed its deserved nvidia.com/gpu",
		},
		{
			name: "preemption takes a lower-priority group of the same queue",
			in: Input{
				Preemptor: Preemptor{Queue: "a", Priority: 10, Members: members(1, 1000)},
				Queues:    map[string]Queue{"a": {Allocated: cpu(4000), Deserved: cpu(4000)}},
				Pods: append(fill("a", "", 10, 2, 1000, "n0"), Pod{
					ID: "a/low", Node: "n0", Queue: "a", Priority: 1, Started: t0, Request: cpu(1000),
				}, Pod{ID: "a/low-young", Node: "n0", Queue: "a", Priority: 5, Started: t0.Add(time.Minute), Request: cpu(1000)}),
				Nodes: nodesWith(0), Options: both,
			},
			wantMode: Preempt, want: []string{"a/low"}, wantNode: "n0",
		},
		{
			name: "preemption never takes equal priority or other queues",
			in: Input{
				Preemptor: Preemptor{Queue: "a", Priority: 10, Members: members(1, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(2000), Deserved: cpu(2000)},
					"b": {Allocated: cpu(2000), Deserved: cpu(2000)},
				},
				Pods:  append(fill("a", "", 10, 2, 1000, "n0"), fill("b", "", 0, 2, 1000, "n0")...),
				Nodes: nodesWith(0), Options: Options{Preempt: true, Now: t0},
			},
			wantWhy: "no preemption: no eligible victims",
		},
		{
			name: "a pod younger than the minimum runtime is protected",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues:    aOver, Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0),
				// Pods started at t0..t0+15m; at t0+16m with 10m minimum, 0..6 may go.
				Options: Options{Reclaim: true, Now: t0.Add(16 * time.Minute), MinRuntime: 10 * time.Minute},
			},
			wantMode: Reclaim, want: []string{"a/p-6"}, wantNode: "n2",
		},
		{
			name: "the fewest victims: a 4-cpu pod takes four pods of one node",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 4000)},
				Queues:    aOver, Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			// The greedy takes the youngest pods (one per node) first; the
			// reprieve gives back all but one node's.
			wantMode: Reclaim, want: []string{"a/p-11", "a/p-15", "a/p-3", "a/p-7"}, wantNode: "n3",
		},
		{
			name: "a victim gang gives up only its members above minMember",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(2, 1000)},
				Queues:    aOver,
				Groups:    map[string]Group{"a/g": {MinMember: 14}},
				Pods:      fill("a", "a/g", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			wantMode: Reclaim, want: []string{"a/a/g-14", "a/a/g-15"}, wantNode: "n2",
		},
		{
			// Seed 84 of the randomized harness: the spare members offered
			// were the youngest of the whole gang, wherever they ran, so a
			// node holding older members could not be cleared and the
			// preemptor stayed pending with the room there.
			name: "a victim gang's spare members are taken where the room is needed",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 2000)},
				Queues:    aOver,
				Groups:    map[string]Group{"a/g": {MinMember: 2}},
				// Three older members on n0, the youngest alone on n1: the
				// two youngest (spare 2) are on different nodes.
				Pods:    fill("a", "a/g", 0, 4, 1000, "n0", "n0", "n0", "n1"),
				Nodes:   nodesWith(0, 0),
				Options: both,
			},
			wantMode: Reclaim, want: []string{"a/a/g-1", "a/a/g-2"}, wantNode: "n0",
		},
		{
			// Upstream's disruptionMode all: the same gang as above, whose
			// two spare members would do, is one victim.
			name: "a Whole group gives up every running pod or none",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 2000)},
				Queues:    aOver,
				Groups:    map[string]Group{"a/g": {MinMember: 2, Whole: true}},
				Pods:      fill("a", "a/g", 0, 4, 1000, "n0", "n0", "n0", "n1"),
				Nodes:     nodesWith(0, 0),
				Options:   both,
			},
			wantMode: Reclaim, want: []string{"a/a/g-0", "a/a/g-1", "a/a/g-2", "a/a/g-3"}, wantNode: "n0",
		},
		{
			name: "a Whole group of minMember 1 is still one victim",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues:    aOver,
				Groups:    map[string]Group{"a/g": {MinMember: 1, Whole: true}},
				Pods:      fill("a", "a/g", 0, 3, 1000, "n0", "n1", "n2"),
				Nodes:     nodesWith(0, 0, 0),
				Options:   both,
			},
			wantMode: Reclaim, want: []string{"a/a/g-0", "a/a/g-1", "a/a/g-2"}, wantNode: "n0",
		},
		{
			name: "a victim gang beyond its spare members is taken whole",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(3, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(8000), Deserved: cpu(4000), Reclaimable: true},
					"b": {Deserved: cpu(4000), Reclaimable: true},
				},
				Groups: map[string]Group{"a/g": {MinMember: 3}},
				// 4 members (spare 1) on n0, n1; 4 singletons of a on n2, n3
				// are younger but the youngest singletons are only two per node.
				Pods:  fill("a", "a/g", 0, 4, 1000, "n0", "n1"),
				Nodes: nodesWith(1000, 0), Options: both,
			},
			// Needs 3 cpu, n0 has 1 free: the spare member plus... the gang
			// would drop to 2 < 3, so it goes whole (4 pods) and the reprieve
			// cannot give any back without breaking it.
			wantMode: Reclaim, want: []string{"a/a/g-0", "a/a/g-1", "a/a/g-2", "a/a/g-3"}, wantNode: "n0",
		},
		{
			name: "single pods are preferred to a whole gang",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 2000)},
				Queues:    aOver,
				Groups:    map[string]Group{"a/g": {MinMember: 2}},
				Pods: append(fill("a", "a/g", 0, 2, 1000, "n0"),
					Pod{ID: "a/old-1", Node: "n1", Queue: "a", Started: t0.Add(-time.Hour), Request: cpu(1000)},
					Pod{ID: "a/old-2", Node: "n1", Queue: "a", Started: t0.Add(-time.Hour), Request: cpu(1000)}),
				Nodes: nodesWith(0, 0), Options: both,
			},
			wantMode: Reclaim, want: []string{"a/old-1", "a/old-2"}, wantNode: "n1",
		},
		{
			name: "a gang bigger than its queue's share does not reclaim",
			in: Input{
				Preemptor: Preemptor{Group: "b/g", Queue: "b", Members: members(4, 3000)},
				Queues:    aOver, Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			wantWhy: "queue b would exceed its deserved cpu (0 allocated + 12 requested > 8)",
		},
		{
			name: "a gang preemptor evicts nothing when only some members would fit",
			in: Input{
				Preemptor: Preemptor{Group: "b/g", Queue: "b", Members: members(3, 1000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(16000), Deserved: cpu(8000), Guarantee: cpu(14000), Reclaimable: true},
					"b": {Deserved: cpu(8000), Reclaimable: true},
				},
				Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			// The guarantee lets a lose 2 pods; the third member has no room.
			wantWhy: "does not fit even after evicting",
		},
		{
			name: "a gang preemptor whose members fit no node evicts nothing",
			in: Input{
				Preemptor: Preemptor{Group: "b/g", Queue: "b", Members: members(2, 5000)},
				Queues: map[string]Queue{
					"a": {Allocated: cpu(16000), Deserved: cpu(4000), Reclaimable: true},
					"b": {Deserved: cpu(12000), Reclaimable: true},
				},
				Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			wantWhy: "does not fit even after evicting",
		},
		{
			name: "a gang preemptor gets room for all its members",
			in: Input{
				Preemptor: Preemptor{Group: "b/g", Queue: "b", Members: members(2, 3000)},
				Queues:    aOver, Pods: fill("a", "", 0, 16, 1000, four...), Nodes: nodesWith(0, 0, 0, 0), Options: both,
			},
			wantMode: Reclaim, want: []string{"a/p-10", "a/p-11", "a/p-14", "a/p-15", "a/p-6", "a/p-7"}, wantNode: "n2",
		},
		{
			name: "ineligible nodes are neither used nor stripped",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues:    aOver, Pods: fill("a", "", 0, 16, 1000, four...),
				Nodes:   []Node{{Name: "n0", Eligible: true}, {Name: "n1"}, {Name: "n2"}, {Name: "n3"}},
				Options: both,
			},
			wantMode: Reclaim, want: []string{"a/p-12"}, wantNode: "n0",
		},
		{
			name: "a pod protected by a disruption budget is taken last",
			in: Input{
				Preemptor: Preemptor{Queue: "b", Members: members(1, 1000)},
				Queues:    aOver,
				Pods: []Pod{
					{ID: "a/young-pdb", Node: "n0", Queue: "a", Started: t0.Add(time.Hour), Request: cpu(1000), Disruptive: true},
					{ID: "a/old", Node: "n0", Queue: "a", Started: t0, Request: cpu(1000)},
				},
				Nodes: nodesWith(0), Options: both,
			},
			wantMode: Reclaim, want: []string{"a/old"}, wantNode: "n0",
		},
		{
			name:    "disabled actions",
			in:      Input{Preemptor: Preemptor{Queue: "b", Members: members(1, 1)}, Options: Options{}},
			wantWhy: "reclaim and preemption are disabled",
		},
		{
			name:    "no members",
			in:      Input{Preemptor: Preemptor{Queue: "b"}, Options: both},
			wantWhy: "nothing to place",
		},
		{
			name: "the preemptor's own gang is never a victim",
			in: Input{
				Preemptor: Preemptor{Group: "a/g", Queue: "a", Priority: 5, Members: members(1, 1000)},
				Queues:    map[string]Queue{"a": {Allocated: cpu(2000), Deserved: cpu(2000)}},
				Groups:    map[string]Group{"a/g": {MinMember: 1}},
				Pods:      fill("a", "a/g", 0, 2, 1000, "n0"), Nodes: nodesWith(0), Options: Options{Preempt: true, Now: t0},
			},
			wantWhy: "no eligible victims",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, ok, why := Decide(tc.in)
			if tc.wantMode == None {
				if ok {
					t.Fatalf("got plan %v (%v), want none", plan.Mode, ids(tc.in, plan))
				}
				if !strings.Contains(why, tc.wantWhy) {
					t.Fatalf("reason %q, want it to contain %q", why, tc.wantWhy)
				}
				return
			}
			if !ok {
				t.Fatalf("no plan: %s", why)
			}
			if plan.Mode != tc.wantMode || plan.Node != tc.wantNode || !slices.Equal(ids(tc.in, plan), tc.want) {
				t.Fatalf("got %v on %s victims %v, want %v on %s victims %v",
					plan.Mode, plan.Node, ids(tc.in, plan), tc.wantMode, tc.wantNode, tc.want)
			}
		})
	}
}

func TestWithSiblings(t *testing.T) {
	first := []resources.List{cpu(500)}
	siblings := []resources.List{cpu(1000), {resources.CPU: 3000, "memory": 1}, cpu(3000), cpu(2000)}
	got := WithSiblings(first, siblings, 2)
	want := []resources.List{cpu(500), {resources.CPU: 3000, "memory": 1}, cpu(3000)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("WithSiblings = %v, want %v", got, want)
	}
	if got := WithSiblings(first, siblings, 10); len(got) != 5 {
		t.Fatalf("asking for more siblings than exist gave %d members, want 5", len(got))
	}
	if got := WithSiblings(first, nil, -1); len(got) != 1 {
		t.Fatalf("no siblings needed gave %d members, want 1", len(got))
	}
}
