package queue

import (
	"strconv"
	"testing"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// TestShareFit: a member beyond its gang's minimum fits while its queue
// and every ancestor stay within their deserved shares, counting what
// their subtrees hold and reserve.
func TestShareFit(t *testing.T) {
	tree := BuildTree([]Spec{
		{Name: "org", Weight: 1},
		{Name: "a", Parent: "org", Weight: 1},
		{Name: "b", Parent: "org", Weight: 3},
		{Name: "c", Weight: 1},
	})
	// 16 cpu: org and c split it evenly, c asks only 4, so org deserves
	// 12, divided 1:3 between a and b.
	shares := Divide(tree, cores(16), map[string]Usage{
		"a": {Pending: cores(16)}, "b": {Pending: cores(16)}, "c": {Pending: cores(4)},
	})
	for q, want := range map[string]int64{"org": 12000, "a": 3000, "b": 9000, "c": 4000} {
		if got := shares.Deserved(q)["cpu"]; got != want {
			t.Fatalf("deserved(%s) = %d, want %d", q, got, want)
		}
	}
	tests := []struct {
		name     string
		noShares bool
		pre      resources.List
		queue    string
		use      map[string]Use
		req      resources.List
		ok       bool
		msg      string
	}{
		{name: "exactly at the share", queue: "a", use: map[string]Use{"a": {Allocated: cores(1)}}, req: cores(2), ok: true},
		{
			name: "above the queue's share", queue: "a", use: map[string]Use{"a": {Allocated: cores(1)}}, req: cores(3),
			msg: "queue a: cpu deserved share 3, held and reserved 1, this member needs 3",
		},
		{
			name: "inflight and reserved extras count", queue: "a",
			use: map[string]Use{"a": {Allocated: cores(1), Inflight: cores(1), Extra: cores(1)}}, req: cores(1),
			msg: "queue a: cpu deserved share 3, held and reserved 3, this member needs 1",
		},
		{
			name: "a sibling above its share fills the parent's", queue: "a",
			use: map[string]Use{"b": {Allocated: cores(11)}}, req: cores(2),
			msg: "queue org: cpu deserved share 12, held and reserved 11, this member needs 2",
		},
		{name: "another top-level queue does not count", queue: "a", use: map[string]Use{"c": {Allocated: cores(12)}}, req: cores(3), ok: true},
		{
			name: "a resource no queue deserves", queue: "c", req: resources.List{"nvidia.com/gpu": 1},
			msg: "no queue deserves any nvidia.com/gpu yet: this member needs 1",
		},
		{
			name: "lower priorities of the queue cover the member (swap)", queue: "a",
			use: map[string]Use{"a": {Allocated: cores(3)}}, req: cores(2), pre: cores(2), ok: true,
		},
		{
			name: "lower priorities cover only part of it", queue: "a",
			use: map[string]Use{"a": {Allocated: cores(3)}}, req: cores(2), pre: cores(1),
			msg: "queue a: cpu deserved share 3, held and reserved 3, this member needs 2",
		},
		{name: "an unknown queue", queue: "ghost", req: cores(100), ok: true},
		{name: "no shares yet", noShares: true, queue: "a", req: cores(100), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := shares
			if tt.noShares {
				s = nil
			}
			ok, msg := ShareFit(s, tt.queue, tt.req, tt.pre, func(q string) Use { return tt.use[q] })
			if ok != tt.ok || msg != tt.msg {
				t.Errorf("Fits = %v %q, want %v %q", ok, msg, tt.ok, tt.msg)
			}
		})
	}
}

// BenchmarkShareFit is PreFilter's share check of one extra member under
// a parent of 100 queues with cpu and memory: the subtree walk is the
// cost, O(subtree x r), never O(pods).
func BenchmarkShareFit(b *testing.B) {
	specs := []Spec{{Name: "org", Weight: 1}}
	usage := map[string]Usage{}
	use := map[string]Use{}
	for i := range 100 {
		name := "q" + strconv.Itoa(i)
		specs = append(specs, Spec{Name: name, Parent: "org", Weight: int32(1 + i%4)})
		usage[name] = Usage{Allocated: resources.List{"cpu": 9000, "memory": 9 << 30}, Pending: resources.List{"cpu": 4000, "memory": 4 << 30}}
		use[name] = Use{Allocated: usage[name].Allocated, Inflight: resources.List{"cpu": 1000}}
	}
	tree := BuildTree(specs)
	shares := Divide(tree, resources.List{"cpu": 1_200_000, "memory": 1200 << 30}, usage)
	read := func(q string) Use { return use[q] }
	req := resources.List{"cpu": 2000, "memory": 1 << 30}
	b.ReportAllocs()
	for b.Loop() {
		if ok, msg := ShareFit(shares, "q7", req, nil, read); !ok {
			b.Fatal(msg)
		}
	}
}
