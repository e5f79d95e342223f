package queue

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// cores returns n whole cpus.
func cores(n int64) resources.List { return resources.List{resources.CPU: n * 1000} }

// pend is a usage that only asks for n cpus.
func pend(n int64) Usage { return Usage{Pending: cores(n)} }

func TestDivide(t *testing.T) {
	tests := []struct {
		name     string
		specs    []Spec
		total    resources.List
		usage    map[string]Usage
		deserved map[string]resources.List // every healthy queue not listed deserves nothing
		realCap  map[string]resources.List // checked where listed
	}{
		{
			name:     "weights 1 and 3 over 16 cpu",
			specs:    []Spec{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(4), "b": cores(12)},
		},
		{
			name:     "weights 1 and 3, the heavy queue wants less: the rest goes to the light one",
			specs:    []Spec{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(6)},
			deserved: map[string]resources.List{"a": cores(10), "b": cores(6)},
		},
		{
			name:     "demand counts allocated, inflight and pending",
			specs:    []Spec{{Name: "a"}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"a": {Allocated: cores(1), Inflight: cores(1), Pending: cores(1)}, "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(3), "b": cores(13)},
		},
		{
			name:     "a queue without demand deserves nothing; its weight does not count",
			specs:    []Spec{{Name: "a", Weight: 100}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"b": pend(100)},
			deserved: map[string]resources.List{"b": cores(16)},
		},
		{
			name:     "everyone's demand fits",
			specs:    []Spec{{Name: "a"}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(3), "b": pend(5)},
			deserved: map[string]resources.List{"a": cores(3), "b": cores(5)},
		},
		{
			name:     "capability caps a queue and the rest is redistributed",
			specs:    []Spec{{Name: "a", Capability: cores(2)}, {Name: "b"}, {Name: "c"}},
			total:    cores(12),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100), "c": pend(100)},
			deserved: map[string]resources.List{"a": cores(2), "b": cores(5), "c": cores(5)},
			realCap:  map[string]resources.List{"a": cores(2), "b": cores(12), "c": cores(12)},
		},
		{
			name:     "capability of 0 and capability on another resource",
			specs:    []Spec{{Name: "a", Capability: cores(0)}, {Name: "b", Capability: resources.List{"nvidia.com/gpu": 1}}},
			total:    cores(8),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100)},
			deserved: map[string]resources.List{"b": cores(8)},
		},
		{
			name:     "guarantee raises a queue above its weighted share",
			specs:    []Spec{{Name: "a", Guarantee: cores(10)}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(10), "b": cores(6)},
			realCap:  map[string]resources.List{"a": cores(16), "b": cores(6)},
		},
		{
			name:     "guarantee below the weighted share changes nothing",
			specs:    []Spec{{Name: "a", Guarantee: cores(2)}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(8), "b": cores(8)},
		},
		{
			name:     "guarantee counts only as far as the queue demands",
			specs:    []Spec{{Name: "a", Guarantee: cores(10)}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(3), "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(3), "b": cores(6)},
			// b may never hold a's reserved 10, even while a is idle.
			realCap: map[string]resources.List{"b": cores(6)},
		},
		{
			name:     "guarantee above capability counts as the capability",
			specs:    []Spec{{Name: "a", Guarantee: cores(10), Capability: cores(4)}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(4), "b": cores(12)},
			realCap:  map[string]resources.List{"a": cores(4), "b": cores(12)},
		},
		{
			// Each may hold only the total minus the other's guarantee.
			name:     "top-level guarantees that do not fit shrink the real capabilities",
			specs:    []Spec{{Name: "a", Weight: 1, Guarantee: cores(12)}, {Name: "b", Weight: 3, Guarantee: cores(12)}},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(4), "b": cores(4)},
			realCap:  map[string]resources.List{"a": cores(4), "b": cores(4)},
		},
		{
			name: "children's guarantees that do not fit in the parent's deserved are water-filled by weight",
			specs: []Spec{
				{Name: "org"}, {Name: "other"},
				{Name: "a", Parent: "org", Weight: 1, Guarantee: cores(6)}, {Name: "b", Parent: "org", Weight: 3, Guarantee: cores(6)},
			},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100), "other": pend(100)},
			deserved: map[string]resources.List{"org": cores(8), "other": cores(8), "a": cores(2), "b": cores(6)},
			realCap:  map[string]resources.List{"a": cores(10), "b": cores(10)},
		},
		{
			name:     "real capability subtracts the other siblings' guarantees",
			specs:    []Spec{{Name: "a", Guarantee: cores(4)}, {Name: "b", Guarantee: cores(6)}, {Name: "c", Capability: cores(20)}},
			total:    cores(16),
			usage:    map[string]Usage{"c": pend(100)},
			deserved: map[string]resources.List{"c": cores(6)},
			realCap:  map[string]resources.List{"a": cores(10), "b": cores(12), "c": cores(6)},
		},
		{
			name: "hierarchy: a parent's deserved is divided among its children by weight",
			specs: []Spec{
				{Name: "org"}, {Name: "other"},
				{Name: "a", Parent: "org", Weight: 1}, {Name: "b", Parent: "org", Weight: 3},
			},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100), "other": pend(100)},
			deserved: map[string]resources.List{"org": cores(8), "other": cores(8), "a": cores(2), "b": cores(6)},
		},
		{
			name: "hierarchy: a parent's capability caps its children",
			specs: []Spec{
				{Name: "org", Capability: cores(4)}, {Name: "other"},
				{Name: "a", Parent: "org"}, {Name: "b", Parent: "org", Weight: 3},
			},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100), "other": pend(100)},
			deserved: map[string]resources.List{"org": cores(4), "other": cores(12), "a": cores(1), "b": cores(3)},
			realCap:  map[string]resources.List{"org": cores(4), "a": cores(4), "b": cores(4)},
		},
		{
			name: "hierarchy: child guarantees inside the parent's real capability",
			specs: []Spec{
				{Name: "org", Capability: cores(10)},
				{Name: "a", Parent: "org", Guarantee: cores(7)}, {Name: "b", Parent: "org"},
			},
			total:    cores(16),
			usage:    map[string]Usage{"a": pend(100), "b": pend(100)},
			deserved: map[string]resources.List{"org": cores(10), "a": cores(7), "b": cores(3)},
			realCap:  map[string]resources.List{"org": cores(10), "a": cores(10), "b": cores(3)},
		},
		{
			name: "hierarchy: three levels, demand only at the bottom",
			specs: []Spec{
				{Name: "x"}, {Name: "y"},
				{Name: "x1", Parent: "x"}, {Name: "x2", Parent: "x"},
				{Name: "x1a", Parent: "x1"},
			},
			total:    cores(16),
			usage:    map[string]Usage{"x1a": pend(100), "x2": pend(1), "y": pend(100)},
			deserved: map[string]resources.List{"x": cores(8), "y": cores(8), "x1": cores(7), "x2": cores(1), "x1a": cores(7)},
		},
		{
			name:     "a parent's own groups compete with its children as a child of weight 1",
			specs:    []Spec{{Name: "org"}, {Name: "a", Parent: "org", Weight: 3}},
			total:    cores(16),
			usage:    map[string]Usage{"org": pend(100), "a": pend(100)},
			deserved: map[string]resources.List{"org": cores(16), "a": cores(12)},
		},
		{
			name: "broken queues are left out: their demand gets nothing, their guarantee reserves nothing",
			specs: []Spec{
				{Name: "ok"}, {Name: "lost", Parent: "ghost", Guarantee: cores(8)},
				{Name: "c1", Parent: "c2"}, {Name: "c2", Parent: "c1"},
			},
			total:    cores(16),
			usage:    map[string]Usage{"ok": pend(100), "lost": pend(100), "c1": pend(100), "unknown": pend(100)},
			deserved: map[string]resources.List{"ok": cores(16)},
			realCap:  map[string]resources.List{"ok": cores(16)},
		},
		{
			name:     "a closed queue's pending work is not demand, what it holds is",
			specs:    []Spec{{Name: "a", State: StateClosed}, {Name: "b"}},
			total:    cores(16),
			usage:    map[string]Usage{"a": {Allocated: cores(3), Inflight: cores(1), Pending: cores(10)}, "b": pend(100)},
			deserved: map[string]resources.List{"a": cores(4), "b": cores(12)},
		},
		{
			name:  "resources are divided independently",
			specs: []Spec{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}},
			total: resources.List{resources.CPU: 16000, "nvidia.com/gpu": 8},
			usage: map[string]Usage{
				"a": {Pending: resources.List{resources.CPU: 100000, "nvidia.com/gpu": 8}},
				"b": {Pending: resources.List{resources.CPU: 100000}},
			},
			deserved: map[string]resources.List{
				"a": {resources.CPU: 4000, "nvidia.com/gpu": 8},
				"b": {resources.CPU: 12000},
			},
		},
		{
			name:     "a resource the cluster lacks is deserved by nobody",
			specs:    []Spec{{Name: "a", Guarantee: resources.List{"nvidia.com/gpu": 2}}},
			total:    cores(4),
			usage:    map[string]Usage{"a": {Pending: resources.List{resources.CPU: 1000, "nvidia.com/gpu": 2}}},
			deserved: map[string]resources.List{"a": {resources.CPU: 1000}},
		},
		{
			name:     "shares round down and never add up to more than the total",
			specs:    []Spec{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			total:    resources.List{resources.CPU: 10},
			usage:    map[string]Usage{"a": pend(1), "b": pend(1), "c": pend(1)},
			deserved: map[string]resources.List{"a": {resources.CPU: 3}, "b": {resources.CPU: 3}, "c": {resources.CPU: 3}},
		},
		{
			name:     "negative amounts count as zero",
			specs:    []Spec{{Name: "a", Guarantee: cores(-3), Capability: cores(-1)}, {Name: "b"}},
			total:    cores(8),
			usage:    map[string]Usage{"a": {Pending: cores(-5)}, "b": {Allocated: cores(-2), Pending: cores(4)}},
			deserved: map[string]resources.List{"b": cores(4)},
		},
		{
			name:     "huge amounts do not overflow",
			specs:    []Spec{{Name: "a", Weight: 65535}, {Name: "b", Weight: 1}},
			total:    resources.List{"memory": math.MaxInt64},
			usage:    map[string]Usage{"a": {Pending: resources.List{"memory": math.MaxInt64}}, "b": {Pending: resources.List{"memory": math.MaxInt64}}},
			deserved: map[string]resources.List{"a": {"memory": 9223231299366420479}, "b": {"memory": 140737488355327}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := BuildTree(tt.specs)
			s := Divide(tr, tt.total, tt.usage)
			for _, name := range tr.Names() {
				q, ok := s.Get(name)
				if !tr.Healthy(name) {
					if ok {
						t.Errorf("Get(%q) of a broken queue = %+v", name, q)
					}
					continue
				}
				if !ok {
					t.Fatalf("Get(%q) failed", name)
				}
				if !q.Deserved.Equal(tt.deserved[name]) {
					t.Errorf("deserved of %s = %v, want %v", name, q.Deserved, tt.deserved[name])
				}
				if want, ok := tt.realCap[name]; ok {
					for k, v := range want {
						if q.RealCapability[k] != v {
							t.Errorf("real capability of %s = %v, want %v", name, q.RealCapability, want)
						}
					}
				}
			}
		})
	}
}

func TestDivideQueueShareFields(t *testing.T) {
	tr := BuildTree([]Spec{{Name: "org"}, {Name: "a", Parent: "org"}, {Name: "b", Parent: "org"}, {Name: "idle"}})
	s := Divide(tr, cores(16), map[string]Usage{
		"a":   {Allocated: cores(2), Inflight: cores(1), Pending: cores(1)},
		"b":   {Allocated: cores(4), Pending: cores(20)},
		"org": {Allocated: cores(1)},
		"gone": {
			Inflight: resources.List{resources.CPU: 500, "memory": 7},
		},
	})
	org, ok := s.Get("org")
	if !ok {
		t.Fatal("Get(org) failed")
	}
	want := QueueShare{
		Deserved:       cores(16),
		RealCapability: cores(16),
		Allocated:      cores(7),
		Inflight:       cores(1),
		Demand:         cores(29),
		Share:          7.0 / 16,
	}
	if !reflect.DeepEqual(org, want) {
		t.Errorf("Get(org) = %+v, want %+v", org, want)
	}
	if got := s.Share("org"); got != want.Share {
		t.Errorf("Share(org) = %v", got)
	}
	if got := s.Deserved("org"); !got.Equal(cores(16)) {
		t.Errorf("Deserved(org) = %v", got)
	}
	a, _ := s.Get("a")
	if !a.Deserved.Equal(cores(4)) || a.Share != 0.5 {
		t.Errorf("Get(a) = %+v, want deserved 4 and share 0.5", a)
	}
	idle, _ := s.Get("idle")
	if len(idle.Deserved) != 0 || idle.Share != 0 || !idle.RealCapability.Equal(cores(16)) {
		t.Errorf("Get(idle) = %+v", idle)
	}
	if s.Share("nope") != 0 || s.Deserved("nope") != nil {
		t.Error("unknown queue has a share")
	}
	if !s.Total().Equal(cores(16)) || s.Tree() != tr {
		t.Error("Total or Tree")
	}
	// The cluster's inflight counts a queue that no longer exists.
	if got := s.inflightAll[s.index[resources.CPU]]; got != 1500 {
		t.Errorf("cluster inflight cpu = %d, want 1500", got)
	}
	if _, err := json.Marshal(QueueShare{Share: UnboundedShare}); err != nil {
		t.Errorf("UnboundedShare does not encode: %v", err)
	}
}

func TestDivideNilInputs(t *testing.T) {
	s := Divide(nil, nil, nil)
	if _, ok := s.Get("x"); ok || s.Tree().Len() != 0 {
		t.Error("empty Divide has queues")
	}
	s = Divide(BuildTree([]Spec{{Name: "a"}}), nil, map[string]Usage{"a": pend(3)})
	if q, _ := s.Get("a"); !q.Deserved.Equal(resources.List{resources.CPU: 0}) || len(q.Deserved) != 1 {
		t.Errorf("deserved without a cluster = %v, want cpu 0", q.Deserved)
	}
}

func TestShareOf(t *testing.T) {
	tests := []struct {
		name                string
		allocated, deserved resources.List
		want                float64
	}{
		{name: "nothing allocated", allocated: nil, deserved: cores(4), want: 0},
		{name: "nothing allocated, nothing deserved", want: 0},
		{name: "zero amounts", allocated: cores(0), deserved: nil, want: 0},
		{name: "half", allocated: cores(2), deserved: cores(4), want: 0.5},
		{name: "max over resources", allocated: resources.List{"cpu": 1, "gpu": 3}, deserved: resources.List{"cpu": 4, "gpu": 4}, want: 0.75},
		{name: "over the deserved share", allocated: cores(6), deserved: cores(4), want: 1.5},
		{name: "allocated but not deserved", allocated: resources.List{"gpu": 1}, deserved: cores(4), want: UnboundedShare},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShareOf(tt.allocated, tt.deserved); got != tt.want {
				t.Errorf("ShareOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFormatShare(t *testing.T) {
	tests := []struct {
		share float64
		want  string
	}{
		{0, "0.00"}, {0.42, "0.42"}, {0.4249, "0.42"}, {1.0 / 3, "0.33"}, {1.5, "1.50"}, {12, "12.00"},
		{UnboundedShare, "Inf"}, {math.Inf(1), "Inf"},
	}
	for _, tt := range tests {
		if got := FormatShare(tt.share); got != tt.want {
			t.Errorf("FormatShare(%v) = %q, want %q", tt.share, got, tt.want)
		}
	}
}

// Room held outside every queue is divided to no queue: on 100 cpu with 50
// held outside, a (running 50, 10 more pending) and b (20 pending) divide
// 50 as 30 and 20, where dividing 100 gave a 60 and b 20; each real
// capability still derives from the whole 100, since that room comes back
// when the pods outside end.
func TestDivideWithoutOutside(t *testing.T) {
	tree := BuildTree([]Spec{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}})
	usage := map[string]Usage{
		"a": {Allocated: cores(50), Pending: cores(10)},
		"b": {Pending: cores(20)},
	}
	for _, tc := range []struct {
		name         string
		outside      resources.List
		wantA, wantB int64
	}{
		{name: "nothing outside", wantA: 60, wantB: 20},
		{name: "half held outside", outside: cores(50), wantA: 30, wantB: 20},
		{name: "more held outside than exists", outside: cores(150), wantA: 0, wantB: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DivideWithout(tree, cores(100), tc.outside, usage)
			for name, want := range map[string]int64{"a": tc.wantA, "b": tc.wantB} {
				q, _ := s.Get(name)
				if got := q.Deserved[resources.CPU]; got != want*1000 {
					t.Errorf("%s deserves %dm, want %d cores", name, got, want)
				}
				if got := q.RealCapability[resources.CPU]; got != 100000 {
					t.Errorf("%s real capability %dm, want the whole 100 cores", name, got)
				}
			}
		})
	}
}
