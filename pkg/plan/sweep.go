package plan

import (
	"math"
	"slices"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// orderClasses sorts class indexes into p.order, larger first: by the
// largest share of the largest node's capacity the class asks on any
// resource. Capacity does not change with commits or releases, so neither
// does the order: a placement that still has room is found again.
func (p *Plan) orderClasses(cs []placement.Class) {
	p.order = p.order[:0]
	for ci := range cs {
		p.order = append(p.order, ci)
		for k := len(p.order) - 1; k > 0 && p.size(cs[p.order[k]]) > p.size(cs[p.order[k-1]]); k-- {
			p.order[k], p.order[k-1] = p.order[k-1], p.order[k]
		}
	}
}

func (p *Plan) size(c placement.Class) float64 {
	s := 0.0
	for j, v := range c.Request {
		if v > 0 {
			if j >= p.r {
				return math.Inf(1)
			}
			s = max(s, float64(v)/p.scale[j])
		}
	}
	return s
}

// prepare orders cs and marks each restricted class's eligible nodes.
func (p *Plan) prepare(cs []placement.Class) {
	p.orderClasses(cs)
	p.elig = fill(p.elig, len(cs)*p.n, false)
	for ci, c := range cs {
		for _, n := range c.Nodes {
			if n >= 0 && int(n) < p.n {
				p.elig[ci*p.n+int(n)] = true
			}
		}
	}
	p.fc = fill(p.fc, len(cs), 0)
	p.active = fill(p.active, len(p.rs), false)
}

// unprepare clears the eligibility marks (O(eligible), not O(nodes)).
func (p *Plan) unprepare(cs []placement.Class) {
	for ci, c := range cs {
		for _, n := range c.Nodes {
			if n >= 0 && int(n) < p.n {
				p.elig[ci*p.n+int(n)] = false
			}
		}
	}
}

func (p *Plan) eligible(cs []placement.Class, ci, n int) bool {
	return cs[ci].Nodes == nil || p.elig[ci*p.n+n]
}

// fit is how many of c's members node row holds, capped at c.Count (a node
// with room for more counts no more towards the gang).
func fit(c placement.Class, row []int64) int {
	return min(placement.Fits(c.Request, row), max(c.Count, 0))
}

// count is how many of c's members room holds, stopping at c.Count.
func (p *Plan) count(c placement.Class, room []int64) int {
	got := 0
	visit := func(n int) bool {
		got += min(placement.Fits(c.Request, room[n*p.r:(n+1)*p.r]), c.Count-got)
		return got < c.Count
	}
	if c.Nodes == nil {
		for n := 0; n < p.n && visit(n); n++ {
		}
		return got
	}
	for _, n := range c.Nodes {
		if n >= 0 && int(n) < p.n && !visit(int(n)) {
			break
		}
	}
	return got
}

// lowerBound is the first checkpoint at which, holds aside, every class has
// room for its count (len(cpAt) when none has). Room only grows with time
// and holds only take room away, so no earlier time can fit: a binary
// search, O(log K x nodes x classes).
func (p *Plan) lowerBound(cs []placement.Class) int {
	lo, hi := 0, len(p.cpAt)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		ok := true
		for _, c := range cs {
			if c.Count > 0 && p.count(c, p.snap[mid*p.nr:(mid+1)*p.nr]) < c.Count {
				ok = false
				break
			}
		}
		if ok {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// search finds the earliest time g fits from checkpoint lb on, bucket by
// bucket (bucket k holds the times after checkpoint k-1 up to checkpoint
// k; the last one, after every checkpoint, has no end). A bucket is swept
// only when its end snapshot, minus the holds over the whole bucket, has
// room for every class: an upper bound of the room at any time in it, so
// a bucket that fails it cannot fit, and costs O(nodes), not O(releases).
func (p *Plan) search(cs []placement.Class, lim int64, lb int) (int64, bool) {
	last := len(p.cpAt) // the bucket after the last checkpoint
	for k := max(lb, 1); k <= last; k++ {
		from := p.cpAt[k-1] + 1
		if lb == 0 && k == 1 {
			from = p.now // now itself is a candidate
		}
		until := Unbounded
		if k < last {
			until = p.cpAt[k]
			if !p.mayFit(cs, lim, k, from, until) {
				continue
			}
		}
		if at, ok := p.sweep(cs, lim, k-1, from == p.now, until); ok {
			return at, true
		}
	}
	return 0, false
}

// mayFit reports whether every class has room for its count in snapshot k
// minus the holds over all of [from, until].
func (p *Plan) mayFit(cs []placement.Class, lim int64, k int, from, until int64) bool {
	copy(p.room, p.snap[k*p.nr:(k+1)*p.nr])
	for _, r := range p.rs {
		if enterAt(r.start, lim) <= from && r.end > until {
			for m := r.lo; m < r.hi; m++ {
				n := int(p.needNode[m])
				addRow(p.room[n*p.r:(n+1)*p.r], p.needAmt[m*p.r:(m+1)*p.r], -1)
			}
		}
	}
	for _, c := range cs {
		if c.Count > 0 && p.count(c, p.room) < c.Count {
			return false
		}
	}
	return true
}

// enterAt is the first t at which a hold starting at start overlaps
// [t, t+lim): start < t+lim.
func enterAt(start, lim int64) int64 {
	if lim == Unbounded || start < math.MinInt64+lim {
		return math.MinInt64
	}
	return start - lim + 1
}

// sweep walks time from checkpoint k to until, applying releases, commits'
// releases and holds entering and leaving [t, t+lim), and tries the fit at
// each time some room came back (and at the checkpoint's own time when
// inclusive). On success p.room holds the placement (p.steps) and p.active
// the holds.
func (p *Plan) sweep(cs []placement.Class, lim int64, k int, inclusive bool, until int64) (int64, bool) {
	t0 := p.cpAt[k]
	copy(p.room, p.snap[k*p.nr:(k+1)*p.nr])
	p.initHolds(lim, t0)
	p.initCounts(cs)
	if inclusive && p.allFit(cs) && p.tryPlace(cs) {
		return t0, true
	}
	tl := p.tl
	mi := p.cpIdx[k]
	oi, _ := slices.BinarySearchFunc(p.ov, t0+1, func(e ovEvent, t int64) int { return cmpInt(e.at, t) })
	ei, li := p.holdCursors(lim, t0)
	for {
		x := Unbounded
		if mi < len(tl.at) {
			x = max(tl.at[mi], p.now+1)
		}
		if oi < len(p.ov) {
			x = min(x, p.ov[oi].at)
		}
		if ei < len(p.byStart) {
			x = min(x, enterAt(p.rs[p.byStart[ei]].start, lim))
		}
		if li < len(p.byEnd) {
			x = min(x, p.rs[p.byEnd[li]].end) // Unbounded: never leaves
		}
		if x == Unbounded || x > until {
			return 0, false
		}
		release := false
		for ; mi < len(tl.at) && max(tl.at[mi], p.now+1) == x; mi++ {
			p.change(cs, int(tl.node[mi]), tl.amt[mi*p.r:(mi+1)*p.r], 1)
			release = true
		}
		for ; oi < len(p.ov) && p.ov[oi].at == x; oi++ {
			o := p.ov[oi]
			p.change(cs, int(o.node), p.ovAmt[o.off:int(o.off)+p.r], 1)
			release = true
		}
		for ; ei < len(p.byStart) && enterAt(p.rs[p.byStart[ei]].start, lim) == x; ei++ {
			p.hold(cs, int(p.byStart[ei]), false)
		}
		for ; li < len(p.byEnd) && p.rs[p.byEnd[li]].end == x; li++ {
			p.hold(cs, int(p.byEnd[li]), true)
			release = true
		}
		if release && p.allFit(cs) && p.tryPlace(cs) {
			return x, true
		}
	}
}

// holdCursors are the first reservations, by start and by end, whose hold
// enters, or leaves, [t, t+lim) after t0. Holds enter in start order and
// leave in end order, so two cursors replace a sorted event list.
func (p *Plan) holdCursors(lim, t0 int64) (ei, li int) {
	for ei < len(p.byStart) && enterAt(p.rs[p.byStart[ei]].start, lim) <= t0 {
		ei++
	}
	for li < len(p.byEnd) && p.rs[p.byEnd[li]].end <= t0 {
		li++
	}
	return ei, li
}

// initHolds takes from p.room the holds of the reservations whose
// [start, end) overlaps [t0, t0+lim).
func (p *Plan) initHolds(lim, t0 int64) {
	for j, r := range p.rs {
		if r.end <= t0 || enterAt(r.start, lim) > t0 {
			continue
		}
		p.active[j] = true
		for m := r.lo; m < r.hi; m++ {
			n := int(p.needNode[m])
			addRow(p.room[n*p.r:(n+1)*p.r], p.needAmt[m*p.r:(m+1)*p.r], -1)
		}
	}
}

// initCounts counts, per class, the members p.room holds.
func (p *Plan) initCounts(cs []placement.Class) {
	for ci, c := range cs {
		p.fc[ci] = 0
		if c.Count <= 0 {
			continue
		}
		if c.Nodes == nil {
			for n := range p.n {
				p.fc[ci] += fit(c, p.room[n*p.r:(n+1)*p.r])
			}
			continue
		}
		for _, n := range c.Nodes {
			if n >= 0 && int(n) < p.n {
				p.fc[ci] += fit(c, p.room[int(n)*p.r:(int(n)+1)*p.r])
			}
		}
	}
}

// change adds sign x amt to node n's room and keeps the class counts.
func (p *Plan) change(cs []placement.Class, n int, amt []int64, sign int64) {
	row := p.room[n*p.r : (n+1)*p.r]
	if len(cs) == 1 { // the common gang: one pod template
		if !p.eligible(cs, 0, n) {
			addRow(row, amt, sign)
			return
		}
		before := fit(cs[0], row)
		addRow(row, amt, sign)
		p.fc[0] += fit(cs[0], row) - before
		return
	}
	for ci := range cs {
		if p.eligible(cs, ci, n) {
			p.fc[ci] -= fit(cs[ci], row)
		}
	}
	addRow(row, amt, sign)
	for ci := range cs {
		if p.eligible(cs, ci, n) {
			p.fc[ci] += fit(cs[ci], row)
		}
	}
}

// hold takes reservation j's room (or gives it back when leave).
func (p *Plan) hold(cs []placement.Class, j int, leave bool) {
	sign := int64(-1)
	if leave {
		sign = 1
	}
	p.active[j] = !leave
	r := p.rs[j]
	for m := r.lo; m < r.hi; m++ {
		p.change(cs, int(p.needNode[m]), p.needAmt[m*p.r:(m+1)*p.r], sign)
	}
}

func (p *Plan) allFit(cs []placement.Class) bool {
	for ci, c := range cs {
		if p.fc[ci] < c.Count {
			return false
		}
	}
	return true
}

// tryPlace places the classes on p.room, one at a time in p.order; on
// failure it gives the room back.
func (p *Plan) tryPlace(cs []placement.Class) bool {
	p.steps = p.steps[:0]
	for _, ci := range p.order {
		c := cs[ci]
		if c.Count <= 0 {
			continue
		}
		c.Start = 0
		p.one[0] = c
		placed, st := p.placer.Place(&p.rm, p.one[:])
		for _, s := range st {
			p.steps = append(p.steps, placement.Step{Class: int32(ci), Node: s.Node})
		}
		if placed < c.Count {
			placement.Undo(&p.rm, cs, p.steps)
			return false
		}
	}
	return true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
