package queue

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// capabilityTree: org (10 cpu) over a (6 cpu, with child a1) and b; free
// has no limit.
func capabilityTree() *Tree {
	return BuildTree([]Spec{
		{Name: "org", Capability: cores(10)},
		{Name: "a", Parent: "org", Capability: cores(6)},
		{Name: "a1", Parent: "a"},
		{Name: "b", Parent: "org"},
		{Name: "free"},
	})
}

func TestCapabilityFit(t *testing.T) {
	tree := capabilityTree()
	tests := []struct {
		name  string
		queue string
		use   map[string]Use
		req   resources.List
		ok    bool
		msg   string
	}{
		{name: "room left", queue: "a", use: map[string]Use{"a": {Allocated: cores(2)}}, req: cores(2), ok: true},
		{name: "exactly at the limit", queue: "a", use: map[string]Use{"a": {Allocated: cores(2), Inflight: cores(1), Extra: cores(1)}}, req: cores(2), ok: true},
		{
			name: "inflight and extras count as reserved", queue: "a",
			use: map[string]Use{"a": {Allocated: cores(2), Inflight: cores(1), Extra: cores(2)}}, req: cores(2),
			msg: "queue a: cpu capability 6, allocated 2, reserved 3, this member needs 2",
		},
		{
			name: "a child's usage counts in its parent", queue: "a",
			use: map[string]Use{"a": {Allocated: cores(1)}, "a1": {Allocated: cores(4)}}, req: cores(2),
			msg: "queue a: cpu capability 6, allocated 5, reserved 0, this member needs 2",
		},
		{
			name: "a sibling's usage counts in the parent", queue: "a1",
			use: map[string]Use{"a1": {Allocated: cores(1)}, "b": {Allocated: cores(7), Extra: cores(1)}}, req: cores(2),
			msg: "queue org: cpu capability 10, allocated 8, reserved 1, this member needs 2",
		},
		{name: "an unlimited resource", queue: "a", use: map[string]Use{"a": {Allocated: cores(6)}}, req: resources.List{"memory": 1 << 30}, ok: true},
		{name: "no capability on the chain", queue: "free", use: map[string]Use{"free": {Allocated: cores(100)}}, req: cores(2), ok: true},
		{name: "an unknown queue", queue: "ghost", req: cores(2), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := CapabilityFit(tree, tt.queue, tt.req, func(q string) Use { return tt.use[q] })
			if ok != tt.ok || msg != tt.msg {
				t.Errorf("CapabilityFit = %v %q, want %v %q", ok, msg, tt.ok, tt.msg)
			}
		})
	}
}

func TestCapabilityDeficits(t *testing.T) {
	tree := capabilityTree()
	tests := []struct {
		name  string
		queue string
		use   map[string]Use
		req   resources.List
		want  []Deficit
	}{
		{name: "within every capability", queue: "a1", use: map[string]Use{"a": {Allocated: cores(2)}, "b": {Inflight: cores(4)}}, req: cores(2)},
		{name: "exactly at the limit", queue: "a", use: map[string]Use{"a": {Allocated: cores(2), Inflight: cores(1), Extra: cores(1)}}, req: cores(2)},
		{
			// A sibling's excess under the parent: only the parent is over,
			// and the sibling's pods are where room can come from.
			name: "the parent over through a sibling", queue: "a1",
			use: map[string]Use{"a1": {Allocated: cores(1)}, "b": {Allocated: cores(8)}}, req: cores(3),
			want: []Deficit{{Queue: "org", Subtree: []string{"a", "a1", "b", "org"}, Over: cores(2)}},
		},
		{
			name: "the queue and its parent over", queue: "a",
			use: map[string]Use{"a": {Allocated: cores(5), Inflight: cores(1)}, "b": {Allocated: cores(4)}}, req: cores(2),
			want: []Deficit{
				{Queue: "a", Subtree: []string{"a", "a1"}, Over: cores(2)},
				{Queue: "org", Subtree: []string{"a", "a1", "b", "org"}, Over: cores(2)},
			},
		},
		{name: "an unlimited resource", queue: "a", use: map[string]Use{"a": {Allocated: cores(6)}}, req: resources.List{"memory": 1 << 30}},
		{name: "no capability on the chain", queue: "free", use: map[string]Use{"free": {Allocated: cores(100)}}, req: cores(2)},
		{name: "an unknown queue", queue: "ghost", req: cores(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CapabilityDeficits(tree, tt.queue, tt.req, func(q string) Use { return tt.use[q] })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CapabilityDeficits = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// BenchmarkCapabilityDeficits is the placement-time check a gang's member
// runs in PreFilter, on a chain whose capped root has 100 children: its cost
// is the root's subtree (queues, never pods).
func BenchmarkCapabilityDeficits(b *testing.B) {
	specs := []Spec{{Name: "org", Capability: cores(1100)}}
	use := map[string]Use{}
	for i := range 100 {
		name := "q" + strconv.Itoa(i)
		specs = append(specs, Spec{Name: name, Parent: "org", Capability: cores(20)})
		use[name] = Use{Allocated: cores(9), Inflight: cores(1)}
	}
	tree := BuildTree(specs)
	read := func(q string) Use { return use[q] }
	for _, tc := range []struct {
		name string
		req  resources.List
		over bool
	}{{"fits", cores(2), false}, {"over", cores(20), true}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := CapabilityDeficits(tree, "q7", tc.req, read); (len(got) > 0) != tc.over {
					b.Fatalf("CapabilityDeficits = %+v, want over %v", got, tc.over)
				}
			}
		})
	}
}
