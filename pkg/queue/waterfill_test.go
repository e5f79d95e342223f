package queue

import (
	"math"
	"slices"
	"testing"
)

func TestWaterFill(t *testing.T) {
	const max = math.MaxInt64
	tests := []struct {
		name  string
		total uint64
		cs    []claim
		want  []uint64
	}{
		{name: "no claimants", total: 10, cs: nil, want: []uint64{}},
		{name: "weights 1 and 3", total: 16, cs: []claim{{1, 0, 100}, {3, 0, 100}}, want: []uint64{4, 12}},
		{name: "everyone's upper bound fits", total: 16, cs: []claim{{1, 0, 3}, {3, 0, 5}}, want: []uint64{3, 5}},
		{name: "a capped claimant leaves its part to the others", total: 12, cs: []claim{{1, 0, 2}, {1, 0, 100}, {1, 0, 100}}, want: []uint64{2, 5, 5}},
		{name: "a lower bound raises a claimant", total: 16, cs: []claim{{1, 10, 100}, {1, 0, 100}}, want: []uint64{10, 6}},
		{name: "lower bounds exactly exhaust the total", total: 16, cs: []claim{{1, 10, 100}, {5, 6, 100}}, want: []uint64{10, 6}},
		{name: "lower bounds beyond the total are water-filled", total: 8, cs: []claim{{1, 6, 100}, {3, 6, 100}}, want: []uint64{2, 6}},
		{name: "lower bounds beyond a zero total", total: 0, cs: []claim{{1, 6, 100}, {3, 6, 100}}, want: []uint64{0, 0}},
		{name: "zero total", total: 0, cs: []claim{{1, 0, 5}}, want: []uint64{0}},
		{name: "a fixed claimant (lo == hi)", total: 10, cs: []claim{{1, 4, 4}, {1, 0, 100}}, want: []uint64{4, 6}},
		{name: "rounding down", total: 10, cs: []claim{{1, 0, 100}, {1, 0, 100}, {1, 0, 100}}, want: []uint64{3, 3, 3}},
		{name: "huge amounts", total: max, cs: []claim{{65535, 0, max}, {1, 0, max}}, want: []uint64{9223231299366420479, 140737488355327}},
		{name: "huge lower bounds", total: max, cs: []claim{{1, max, max}, {1, max, max}}, want: []uint64{max / 2, max / 2}},
		{name: "a heavy claimant not yet rising", total: 10, cs: []claim{{65535, max, max}, {1, 0, 100}}, want: []uint64{10, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make([]uint64, len(tt.cs))
			waterFill(tt.total, tt.cs, out, nil)
			if !slices.Equal(out, tt.want) {
				t.Errorf("waterFill = %v, want %v", out, tt.want)
			}
			if ref := refWaterFill(tt.total, tt.cs); !slices.Equal(ref, tt.want) {
				t.Errorf("reference = %v, want %v", ref, tt.want)
			}
		})
	}
}

func TestU128(t *testing.T) {
	a := mul64(math.MaxUint64, math.MaxUint64) // 2^128 - 2^65 + 1
	if a.cmp(a) != 0 || a.cmp(u128of(1)) != 1 || u128of(1).cmp(a) != -1 {
		t.Error("cmp on the high word")
	}
	if b := a.add(u128of(5)).sub(u128of(5)); b != a {
		t.Errorf("add/sub round trip = %+v, want %+v", b, a)
	}
	if u128of(3).cmp(u128of(4)) != -1 || u128of(4).cmp(u128of(3)) != 1 {
		t.Error("cmp on the low word")
	}
}

func TestSatAdd(t *testing.T) {
	if satAdd(math.MaxInt64, 1) != math.MaxInt64 || satAdd(2, 3) != 5 {
		t.Error("satAdd")
	}
}
