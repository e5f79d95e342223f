package queue

import (
	"math"
	"math/bits"
	"slices"
)

// u128 is an unsigned 128-bit integer, enough to hold any sum of int64 amounts
// and any product of an amount and a weight sum without overflow.
type u128 struct{ hi, lo uint64 }

func u128of(v uint64) u128 { return u128{lo: v} }

func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}
}

func (x u128) sub(y u128) u128 {
	lo, b := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, b)
	return u128{hi, lo}
}

func (x u128) cmp(y u128) int {
	switch {
	case x.hi < y.hi:
		return -1
	case x.hi > y.hi:
		return 1
	case x.lo < y.lo:
		return -1
	case x.lo > y.lo:
		return 1
	}
	return 0
}

// claim is one claimant's terms for one resource: its weight and the bounds
// its share must stay within.
type claim struct {
	w      uint64 // >= 1
	lo, hi uint64 // lo <= hi
}

// fillEvent is a breakpoint p/q of the water level where claimant i starts
// rising from lo (activate) or stops at hi.
type fillEvent struct {
	p, q     uint64
	i        int32
	activate bool
}

// waterFill divides total among claims by weighted water-filling and writes
// each share to out: with a water level L, claimant i gets w_i*L clamped to
// [lo_i, hi_i], and L is the level at which the shares add up to total. This is
// the fixed point of "each round, give the remainder out by weight, capped by
// hi and raised to lo, until no share changes", computed exactly and in one
// sweep over the sorted breakpoints instead of in rounds. Shares are rounded
// down, so they never add up to more than total.
//
//   - When the upper bounds fit (sum hi <= total) everyone gets hi.
//   - When the lower bounds alone exhaust total (sum lo >= total: guarantees do
//     not fit) total is water-filled with every claimant capped at its lo, so the
//     shares still add up to at most total.
//
// The share of a claimant never decreases when its own weight grows (the others
// fixed): the continuous solution is monotone and rounding down keeps it so.
// ev is scratch space, returned for reuse.
func waterFill(total uint64, cs []claim, out []uint64, ev []fillEvent) []fillEvent {
	var sumLo, sumHi u128
	for _, c := range cs {
		sumLo = sumLo.add(u128of(c.lo))
		sumHi = sumHi.add(u128of(c.hi))
	}
	t := u128of(total)
	switch {
	case sumHi.cmp(t) <= 0:
		for i, c := range cs {
			out[i] = c.hi
		}
		return ev
	case sumLo.cmp(t) == 0:
		for i, c := range cs {
			out[i] = c.lo
		}
		return ev
	case sumLo.cmp(t) > 0:
		return sweep(total, cs, out, ev, true, 0)
	}
	return sweep(total, cs, out, ev, false, sumLo.lo)
}

// sweep solves sum_i clamp(w_i*L, lo_i, hi_i) = total for L, given that
// sum lo < total < sum hi, where (lo, hi) is (0, claim.lo) when toLo is set and
// (claim.lo, claim.hi) otherwise; sumLo is the sum of the lower bounds.
func sweep(total uint64, cs []claim, out []uint64, ev []fillEvent, toLo bool, sumLo uint64) []fillEvent {
	ev = fillEvents(cs, ev, toLo)
	pinned, w := fillLevel(total, cs, ev, toLo, sumLo)
	if w == 0 { // unreachable when sum hi > total; be safe
		for i, cl := range cs {
			_, out[i] = claimBounds(cl, toLo)
		}
		return ev
	}
	// The level is L = (total-pinned)/w; each share is w_i*L rounded down, clamped.
	rem := total - pinned
	for i, cl := range cs {
		lo, hi := claimBounds(cl, toLo)
		prod := mul64(cl.w, rem)
		x := uint64(math.MaxUint64)
		if prod.hi < w {
			x, _ = bits.Div64(prod.hi, prod.lo, w)
		}
		out[i] = min(max(x, lo), hi)
	}
	return ev
}

// claimBounds is the range a claimant's share must stay within in sweep:
// (0, c.lo) when the lower bounds themselves are water-filled (toLo), else
// (c.lo, c.hi).
func claimBounds(c claim, toLo bool) (lo, hi uint64) {
	if toLo {
		return 0, c.lo
	}
	return c.lo, c.hi
}

// fillEvents returns, in ev's space, the breakpoints of the water level
// where each claimant starts rising from its lower bound and stops at its
// upper bound, in level order.
func fillEvents(cs []claim, ev []fillEvent, toLo bool) []fillEvent {
	ev = ev[:0]
	for i, c := range cs {
		lo, hi := claimBounds(c, toLo)
		ev = append(ev,
			fillEvent{p: lo, q: c.w, i: int32(i), activate: true},
			fillEvent{p: hi, q: c.w, i: int32(i)})
	}
	slices.SortFunc(ev, func(a, b fillEvent) int {
		if c := mul64(a.p, b.q).cmp(mul64(b.p, a.q)); c != 0 {
			return c
		}
		// At equal levels activate first, so that a claimant with lo == hi is
		// never deactivated before it was activated.
		switch {
		case a.activate && !b.activate:
			return -1
		case !a.activate && b.activate:
			return 1
		}
		return 0
	})
	return ev
}

// fillLevel sweeps the sorted breakpoints ev up to the level where the
// filled amount reaches total, and returns the filled amount's terms there:
// below the next breakpoint, f(L) = pinned + w*L, where pinned sums the
// bounds of the claimants held at lo or hi and w the weights of the ones in
// between. f is continuous and non-decreasing, and f(0) = sumLo < total, so
// pinned < total holds until the sweep stops.
func fillLevel(total uint64, cs []claim, ev []fillEvent, toLo bool, sumLo uint64) (pinned, w uint64) {
	pinned = sumLo
	for _, e := range ev {
		// Stop at the first breakpoint where f reaches total: w*p/q >= total-pinned.
		if w > 0 && mul64(w, e.p).cmp(mul64(total-pinned, e.q)) >= 0 {
			break
		}
		lo, hi := claimBounds(cs[e.i], toLo)
		if e.activate {
			pinned -= lo
			w += cs[e.i].w
		} else {
			pinned += hi
			w -= cs[e.i].w
		}
	}
	return pinned, w
}
