package plan

import (
	"slices"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// Job is work that would start now out of turn: a backfill job behind a
// reserved head in its own queue, or a loan, another queue's work in room
// a queue is owed. Both follow the same rule (CanBackfill), since what a
// loan must not do is exactly what a backfill must not do: delay a
// reservation.
type Job struct {
	// Classes are the members to start now (a singleton pod is one class
	// of one member). Start is honoured as in pkg/placement.
	Classes []placement.Class
	// Limit is the job's run-time limit in seconds; <= 0 or Unbounded
	// means none.
	Limit int64
}

// CanBackfill reports whether j can start now without delaying any
// reservation, and where (first-fit, classes larger first): on node n it
// may use the free room now, and, for each reservation that starts before
// j ends (now+Limit), only what that reservation leaves on n at its start
// (its slack, after its own members and the reservations overlapping it).
// So a job that ends before a reservation starts may use that
// reservation's room; an unbounded job ends after every start, so it only
// uses room no reservation ever needs. The steps are valid until the next
// call; pass them to Commit if the caller starts the job. Cost O(classes x
// nodes visited), plus the constraints of the nodes visited (one per
// reservation touching the node); nothing is allocated.
func (p *Plan) CanBackfill(j Job) ([]placement.Step, bool) {
	end := p.endOf(j.Limit)
	tree := p.treeFor(end)
	for _, c := range j.Classes {
		if c.Count > 0 && c.Nodes == nil && tree.next(0, c.Request) < 0 {
			return nil, false // no node has room for one member
		}
	}
	p.orderClasses(j.Classes)
	p.steps = p.steps[:0]
	ok := true
	for _, ci := range p.order {
		if !p.fillClass(j.Classes, ci, end, tree) {
			ok = false
			break
		}
	}
	for _, s := range p.steps {
		n := int(s.Node)
		clear(p.taken[n*p.r : (n+1)*p.r])
	}
	if !ok {
		p.steps = p.steps[:0]
		return nil, false
	}
	return p.steps, true
}

// fillClass places class ci's members first-fit on the room a job ending at
// end may use, counting what the job's earlier classes took (p.taken).
// Over every node, tree (an upper bound of that room) skips the nodes
// without room for a member.
func (p *Plan) fillClass(cs []placement.Class, ci int, end int64, tree *freeTree) bool {
	c := cs[ci]
	left := c.Count
	count := p.n
	if c.Nodes != nil {
		count = len(c.Nodes)
	}
	for k := max(c.Start, 0); k < count && left > 0; k++ {
		n := k
		if c.Nodes == nil {
			if n = tree.next(k, c.Request); n < 0 || n >= p.n {
				break
			}
			k = n
		} else if n = int(c.Nodes[k]); n < 0 || n >= p.n {
			continue
		}
		t := p.taken[n*p.r : (n+1)*p.r]
		m := min(fitsLeft(c.Request, p.usable(n, end), t), left)
		for range m {
			p.steps = append(p.steps, placement.Step{Class: int32(ci), Node: int32(n)})
			addRow(t, c.Request, 1)
		}
		left -= m
	}
	return left <= 0
}

// usable is the room on node n a job running until end may use: free now,
// capped by the slack of every reservation on n starting before end.
func (p *Plan) usable(n int, end int64) []int64 {
	row := p.snap[n*p.r : (n+1)*p.r]
	e := p.head[n]
	if e < 0 {
		return row
	}
	copy(p.u, row)
	for ; e >= 0; e = p.cNext[e] {
		if p.cStart[e] < end {
			for j, v := range p.cSlack[int(e)*p.r : (int(e)+1)*p.r] {
				p.u[j] = min(p.u[j], v)
			}
		}
	}
	return p.u
}

// Commit starts j where steps (from CanBackfill of the same j) say: its
// room leaves the free room now and every reservation's slack it lives
// through, and comes back at its end, for the Reserve calls that follow.
// The reservations made so far stay valid: that is CanBackfill's rule.
// The Timeline is not changed (the caller's pod events will do that).
// O(steps x (checkpoints + tree levels x (constraints on the node + log
// nodes)) + commits so far).
func (p *Plan) Commit(j Job, steps []placement.Step) {
	end := p.endOf(j.Limit)
	for _, s := range steps {
		n, q := int(s.Node), j.Classes[s.Class].Request
		for k, at := range p.cpAt {
			if at < end {
				addRow(p.snap[k*p.nr+n*p.r:k*p.nr+(n+1)*p.r], q, -1)
			}
		}
		p.refresh(n, 0)
		for e := p.head[n]; e >= 0; e = p.cNext[e] {
			if p.cStart[e] < end {
				addRow(p.cSlack[int(e)*p.r:(int(e)+1)*p.r], q, -1)
			}
		}
		if end == Unbounded {
			continue
		}
		off := int32(len(p.ovAmt))
		p.ovAmt = append(p.ovAmt, make([]int64, p.r)...)
		addRow(p.ovAmt[off:], q, 1)
		i, _ := slices.BinarySearchFunc(p.ov, end+1, func(e ovEvent, t int64) int { return cmpInt(e.at, t) })
		p.ov = slices.Insert(p.ov, i, ovEvent{at: end, node: int32(n), off: off})
	}
}

// Backfill trees: trees[i] bounds the room a job ending at or after
// theta[i] may use (free now, capped by the slack of every reservation
// starting before theta[i]); the last is for jobs that never end. A job
// searches the tree of the largest threshold not after its end: more
// reservations constrain a later end, so that tree's room is at least the
// job's, and a job that fits nowhere is refused at its root. The
// thresholds grow fourfold from a minute (1m, 4m, 16m, ... 11d).
const treeLevels = 9

func (p *Plan) resetTrees() {
	p.theta = p.theta[:0]
	p.theta = append(p.theta, satAdd(p.now, 1))
	for i, d := 1, int64(60); i < treeLevels-1; i, d = i+1, d*4 {
		p.theta = append(p.theta, satAdd(p.now, d))
	}
	p.theta = append(p.theta, Unbounded)
	if len(p.trees) != treeLevels {
		p.trees = make([]freeTree, treeLevels)
	}
	for i := range p.trees {
		p.trees[i].reset(p.snap, p.n, p.r)
	}
}

func (p *Plan) treeFor(end int64) *freeTree {
	i := len(p.theta) - 1
	for i > 0 && p.theta[i] > end {
		i--
	}
	return &p.trees[i]
}

// refresh recomputes node n's leaf in the trees of thresholds after
// since: its room now or a constraint starting at since changed.
func (p *Plan) refresh(n int, since int64) {
	for i, th := range p.theta {
		if th > since {
			p.trees[i].update(n, p.usable(n, th))
		}
	}
}

// fitsLeft is how many copies of req fit in u minus t.
func fitsLeft(req, u, t []int64) int {
	n := int(^uint(0) >> 1)
	for j, v := range req {
		if v <= 0 {
			continue
		}
		if j >= len(u) {
			return 0
		}
		f := u[j] - t[j]
		if f < v {
			return 0
		}
		n = min(n, int(f/v))
	}
	return n
}

// fitsRow reports whether one req fits in row.
func fitsRow(req, row []int64) bool {
	for j, v := range req {
		if v > 0 && (j >= len(row) || row[j] < v) {
			return false
		}
	}
	return true
}
