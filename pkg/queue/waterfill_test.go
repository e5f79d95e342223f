package queue

import (
	"math"
	"math/big"
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

// refWaterFill is an independent, exact (big.Rat) water-filling: pin the
// claimants that are surely at a bound until the rest fit at a common level.
func refWaterFill(total uint64, cs []claim) []uint64 {
	n := len(cs)
	sumLo, sumHi := new(big.Int), new(big.Int)
	for _, c := range cs {
		sumLo.Add(sumLo, new(big.Int).SetUint64(c.lo))
		sumHi.Add(sumHi, new(big.Int).SetUint64(c.hi))
	}
	t := new(big.Int).SetUint64(total)
	lo, hi := make([]*big.Rat, n), make([]*big.Rat, n)
	out := make([]uint64, n)
	switch {
	case sumHi.Cmp(t) <= 0:
		for i, c := range cs {
			out[i] = c.hi
		}
		return out
	case sumLo.Cmp(t) == 0:
		for i, c := range cs {
			out[i] = c.lo
		}
		return out
	}
	overG := sumLo.Cmp(t) > 0
	for i, c := range cs {
		if overG {
			lo[i], hi[i] = new(big.Rat), new(big.Rat).SetInt(new(big.Int).SetUint64(c.lo))
		} else {
			lo[i], hi[i] = new(big.Rat).SetInt(new(big.Int).SetUint64(c.lo)), new(big.Rat).SetInt(new(big.Int).SetUint64(c.hi))
		}
	}
	clamp := func(x *big.Rat, i int) *big.Rat {
		if x.Cmp(lo[i]) < 0 {
			return lo[i]
		}
		if x.Cmp(hi[i]) > 0 {
			return hi[i]
		}
		return x
	}
	val := make([]*big.Rat, n)
	pinned := make([]bool, n)
	for {
		w, r := new(big.Rat), new(big.Rat).SetInt(t)
		for i, c := range cs {
			if pinned[i] {
				r.Sub(r, val[i])
			} else {
				w.Add(w, new(big.Rat).SetUint64(c.w))
			}
		}
		if w.Sign() == 0 {
			break
		}
		level := new(big.Rat).Quo(r, w)
		excess := new(big.Rat).Neg(r)
		share := make([]*big.Rat, n)
		for i, c := range cs {
			if !pinned[i] {
				share[i] = new(big.Rat).Mul(level, new(big.Rat).SetUint64(c.w))
				excess.Add(excess, clamp(share[i], i))
			}
		}
		switch excess.Sign() {
		case 0:
			for i := range cs {
				if !pinned[i] {
					val[i] = clamp(share[i], i)
					pinned[i] = true
				}
			}
		case 1: // the level is lower: whoever is at or below lo stays there
			for i := range cs {
				if !pinned[i] && share[i].Cmp(lo[i]) <= 0 {
					val[i], pinned[i] = lo[i], true
				}
			}
		default: // the level is higher: whoever is at or above hi stays there
			for i := range cs {
				if !pinned[i] && share[i].Cmp(hi[i]) >= 0 {
					val[i], pinned[i] = hi[i], true
				}
			}
		}
	}
	for i := range cs {
		q := new(big.Int).Quo(val[i].Num(), val[i].Denom())
		out[i] = q.Uint64()
	}
	return out
}

func decodeClaims(data []byte) (uint64, []claim) {
	in := &bytesIn{data}
	total := uint64(in.amount())
	n := 1 + int(in.byte())%7
	cs := make([]claim, n)
	for i := range cs {
		w := 1 + uint64(in.byte())
		if in.byte()&1 == 1 {
			w *= 257 // up to 65792: beyond the API's range, still fine for the math
		}
		a, b := uint64(in.amount()), uint64(in.amount())
		if a > b {
			a, b = b, a
		}
		cs[i] = claim{w: w, lo: a, hi: b}
	}
	return total, cs
}

func FuzzWaterFill(f *testing.F) {
	f.Add([]byte{16, 0, 10, 1, 0, 0, 0, 0, 0, 100, 0, 0, 2, 0, 0, 0, 0, 0, 100, 0, 0}, uint8(1), uint8(1))
	f.Add([]byte{16, 0, 10, 2, 0, 0, 10, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0}, uint8(2), uint8(2))
	f.Add([]byte{0xff, 0xff, 63, 3, 0xfe, 1, 0xff, 0xff, 63, 0xff, 0xff, 63, 0, 0, 0xff, 0xff, 63, 0xff, 0xff, 63}, uint8(0), uint8(3))
	f.Add([]byte{10, 0, 0, 3, 0, 0, 5, 0, 0, 9, 0, 0, 0, 0, 4, 0, 0, 9, 0, 0, 7, 1, 3, 0, 0, 8, 0, 0}, uint8(1), uint8(4))
	f.Add([]byte{}, uint8(2), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, pick, bump uint8) {
		total, cs := decodeClaims(data)
		out := make([]uint64, len(cs))
		waterFill(total, cs, out, nil)
		if want := refWaterFill(total, cs); !slices.Equal(out, want) {
			t.Fatalf("waterFill(%d, %+v) = %v, reference %v", total, cs, out, want)
		}
		var sum, sumLo u128
		for i, c := range cs {
			sum = sum.add(u128of(out[i]))
			sumLo = sumLo.add(u128of(c.lo))
			if out[i] > c.hi {
				t.Fatalf("share %d = %d above hi %d", i, out[i], c.hi)
			}
		}
		if sumLo.cmp(u128of(total)) <= 0 {
			if sum.cmp(u128of(total)) > 0 {
				t.Fatalf("shares %v add up to more than %d", out, total)
			}
			for i, c := range cs {
				if out[i] < c.lo {
					t.Fatalf("share %d = %d below lo %d though the lows fit", i, out[i], c.lo)
				}
			}
		} else if sum.cmp(u128of(total)) > 0 {
			t.Fatalf("over-committed lows: shares %v add up to more than %d", out, total)
		}
		// Raising one claimant's weight never lowers its share.
		k := int(pick) % len(cs)
		more := slices.Clone(cs)
		more[k].w += 1 + uint64(bump)
		out2 := make([]uint64, len(cs))
		waterFill(total, more, out2, nil)
		if out2[k] < out[k] {
			t.Fatalf("weight %d -> %d lowered share %d -> %d (%+v, total %d)", cs[k].w, more[k].w, out[k], out2[k], cs, total)
		}
	})
}
