package convert

import (
	"reflect"
	"testing"

	"github.com/caldera-sched/caldera/pkg/resources"
)

func TestRequestInterner(t *testing.T) {
	var in RequestInterner
	a := in.intern(resources.List{resources.CPU: 1000, "memory": 1 << 30})
	b := in.intern(resources.List{"memory": 1 << 30, resources.CPU: 1000})
	if reflect.ValueOf(a).Pointer() != reflect.ValueOf(b).Pointer() {
		t.Error("equal requests were not shared")
	}
	for _, other := range []resources.List{
		{resources.CPU: 1000},
		{resources.CPU: 1000, "memory": 1<<30 + 1},
		{resources.CPU: 1000, "memory": 1 << 30, "nvidia.com/gpu": 0},
		{},
	} {
		got := in.intern(other)
		if !got.Equal(other) || len(got) != len(other) {
			t.Errorf("intern(%v) = %v", other, got)
		}
		if reflect.ValueOf(got).Pointer() == reflect.ValueOf(a).Pointer() {
			t.Errorf("intern(%v) shared the list of %v", other, a)
		}
	}
	// The argument is not kept: changing it afterwards changes no shared list.
	arg := resources.List{resources.CPU: 7}
	shared := in.intern(arg)
	arg[resources.CPU] = 8
	if shared[resources.CPU] != 7 {
		t.Error("the interner kept its argument")
	}
	// Past the bound, new shapes still get a correct list of their own.
	for i := range maxInterned + 10 {
		l := resources.List{resources.CPU: int64(i + 10_000)}
		if got := in.intern(l); !got.Equal(l) {
			t.Fatalf("intern(%v) = %v", l, got)
		}
	}
	if len(in.lists) > maxInterned {
		t.Errorf("%d shapes interned, bound is %d", len(in.lists), maxInterned)
	}
}

func BenchmarkRequestInternerHit(b *testing.B) {
	var in RequestInterner
	l := resources.List{resources.CPU: 1000, "memory": 1 << 30, "nvidia.com/gpu": 1}
	in.intern(l)
	b.ReportAllocs()
	for b.Loop() {
		in.intern(l)
	}
}
