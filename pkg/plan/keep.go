package plan

import (
	"slices"
	"sort"
)

// A reservation planned again keeps its placement when it still fits at
// its start. The search places a gang first-fit at each release time, and
// first-fit is not monotone in the room: once room comes back early (a
// job ends before its limit) it may fail at the old start, where the old
// placement still fits, and find a later one. A job let in around the old
// placement (backfill, which its per-node slack bounded) would then seem
// to have delayed the reservation, and users would see the start and
// nodes move for nothing.

// keeps reports whether g's kept placement (Gang.Keep) fits at g.KeepAt,
// which is not in the past, beside the reservations already made. On true
// p.steps is that placement and p.room the room left at KeepAt by it and
// the reservations holding room over [KeepAt, KeepAt+lim), as record
// takes them. On false both are as the search left them: the fit is tried
// on scratch of its own, since a kept placement that fails on one node
// leaves the room half taken, and record would turn that into the slack
// backfill jobs are held to. O(releases since the checkpoint before
// KeepAt + reservations + members).
func (p *Plan) keeps(g Gang, lim int64) bool {
	if len(g.Keep) == 0 || g.KeepAt < p.now || !p.keepValid(g) {
		return false
	}
	at := g.KeepAt
	p.roomAt(p.kept, at)
	for _, r := range p.rs {
		if enterAt(r.start, lim) <= at && r.end > at {
			for m := r.lo; m < r.hi; m++ {
				n := int(p.needNode[m])
				addRow(p.kept[n*p.r:(n+1)*p.r], p.needAmt[m*p.r:(m+1)*p.r], -1)
			}
		}
	}
	for _, s := range g.Keep {
		row := p.kept[int(s.Node)*p.r : (int(s.Node)+1)*p.r]
		addRow(row, g.Classes[s.Class].Request, -1)
		for _, v := range row {
			if v < 0 {
				return false
			}
		}
	}
	copy(p.room, p.kept)
	p.steps = append(p.steps[:0], g.Keep...)
	return true
}

// keepValid reports whether g.Keep places exactly each class's count, on
// nodes of the plan the class may use.
func (p *Plan) keepValid(g Gang) bool {
	p.fc = fill(p.fc, len(g.Classes), 0)
	for _, s := range g.Keep {
		if s.Class < 0 || int(s.Class) >= len(g.Classes) || s.Node < 0 || int(s.Node) >= p.n {
			return false
		}
		if c := g.Classes[s.Class]; c.Nodes != nil && !slices.Contains(c.Nodes, s.Node) {
			return false
		}
		p.fc[s.Class]++
	}
	for ci, c := range g.Classes {
		if p.fc[ci] != max(c.Count, 0) {
			return false
		}
	}
	return true
}

// roomAt sets room to the free room at time at (>= now): the last
// checkpoint's snapshot at or before it, plus the releases and commits'
// releases after that checkpoint up to at.
func (p *Plan) roomAt(room []int64, at int64) {
	k := sort.Search(len(p.cpAt), func(i int) bool { return p.cpAt[i] > at }) - 1
	copy(room, p.snap[k*p.nr:(k+1)*p.nr])
	tl := p.tl
	for i := p.cpIdx[k]; i < len(tl.at) && p.when(i) <= at; i++ {
		n := int(tl.node[i])
		addRow(room[n*p.r:(n+1)*p.r], tl.amt[i*p.r:(i+1)*p.r], 1)
	}
	oi := sort.Search(len(p.ov), func(i int) bool { return p.ov[i].at > p.cpAt[k] })
	for ; oi < len(p.ov) && p.ov[oi].at <= at; oi++ {
		o := p.ov[oi]
		addRow(room[int(o.node)*p.r:(int(o.node)+1)*p.r], p.ovAmt[o.off:int(o.off)+p.r], 1)
	}
}
