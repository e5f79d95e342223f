package plan

import (
	"slices"
	"testing"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// bytesIn hands out fuzz bytes; once they run out it yields zeros.
type bytesIn struct{ b []byte }

func (in *bytesIn) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *bytesIn) n(m int) int { return int(in.byte()) % m }

// world is a small random cluster: free room now, running pods, gangs in
// queue order and backfill candidates.
type world struct {
	r       int
	free    []int64
	running []Alloc
	gangs   []Gang
	jobs    []Job
}

func (in *bytesIn) request(r, most int) []int64 {
	req := make([]int64, r)
	for j := range req {
		req[j] = int64(in.n(most + 1))
	}
	return req
}

func (in *bytesIn) limit(most int) int64 {
	if in.n(5) == 0 {
		return Unbounded
	}
	return int64(1 + in.n(most))
}

func (in *bytesIn) classes(r, nodes, most int) []placement.Class {
	cs := make([]placement.Class, 1+in.n(2))
	for i := range cs {
		cs[i] = placement.Class{Request: in.request(r, most), Count: 1 + in.n(3)}
		if mask := in.byte(); mask&1 == 1 {
			cs[i].Nodes = []int32{}
			for n := range nodes {
				if mask>>(1+n)&1 == 1 {
					cs[i].Nodes = append(cs[i].Nodes, int32(n))
				}
			}
		}
	}
	return cs
}

func decodeWorld(data []byte) world {
	in := &bytesIn{data}
	w := world{r: 1 + in.n(2)}
	nodes := 1 + in.n(6)
	for range nodes * w.r {
		w.free = append(w.free, int64(in.n(6)))
	}
	for range in.n(16) {
		a := Alloc{Node: int32(in.n(nodes)), Request: in.request(w.r, 5), End: int64(1 + in.n(40))}
		switch in.n(6) {
		case 0:
			a.End = Unbounded
		case 1:
			a.End, a.EstimatedEnd = Unbounded, int64(1+in.n(40))
		}
		w.running = append(w.running, a)
	}
	for i := range 1 + in.n(4) {
		w.gangs = append(w.gangs, Gang{Key: string(rune('a' + i)), Classes: in.classes(w.r, nodes, 6), Limit: in.limit(30)})
	}
	for range in.n(12) {
		w.jobs = append(w.jobs, Job{Classes: in.classes(w.r, nodes, 4), Limit: in.limit(60)})
	}
	return w
}

// reserveAll reserves the gangs in order; a gang the plan cannot reserve
// gets a zero Reservation with Start -1.
func reserveAll(p *Plan, gangs []Gang) []Reservation {
	out := make([]Reservation, len(gangs))
	for i, g := range gangs {
		r, err := p.Reserve(g)
		if err != nil {
			r.Start = -1
		}
		out[i] = r
	}
	return out
}

// checkPhysical is the oracle, independent of the plan's bookkeeping: at
// every reservation's start, the reservations holding room then fit in the
// room free then (free now plus every release due by then).
func checkPhysical(t *testing.T, w world, now int64, gangs []Gang, rs []Reservation) {
	t.Helper()
	for _, ri := range rs {
		if ri.Start < 0 {
			continue
		}
		at := ri.Start
		room := slices.Clone(w.free)
		for _, a := range w.running {
			if e, _, ok := a.release(); ok && max(e, now+1) <= at {
				addRow(room[int(a.Node)*w.r:(int(a.Node)+1)*w.r], a.Request, 1)
			}
		}
		for k, rj := range rs {
			if rj.Start >= 0 && rj.Start <= at && at < rj.End {
				for _, s := range rj.Steps {
					addRow(room[int(s.Node)*w.r:(int(s.Node)+1)*w.r], gangs[k].Classes[s.Class].Request, -1)
				}
			}
		}
		for i, v := range room {
			if v < min(w.free[i], 0) {
				t.Fatalf("at %d node %d resource %d is over-committed by %d; reservations %+v", at, i/w.r, i%w.r, -v, rs)
			}
		}
	}
}

// FuzzBackfillNeverDelaysReservation: reserve for the first gangs, accept
// and commit backfill jobs one at a time, and after each commit re-plan every
// gang from scratch on the new state. A reservation never starts later
// because of a backfill; the gangs reserved after the commits in the
// running plan get what the fresh plan gives them; and no plan ever
// over-commits a node at any reservation's start.
func FuzzBackfillNeverDelaysReservation(f *testing.F) {
	f.Add([]byte{1, 2, 0, 0, 3, 0, 4, 40, 2, 1, 4, 20, 2, 0, 1, 4, 1, 0, 9, 2, 0, 2, 1, 0, 10, 0, 1, 1, 0, 50})
	f.Add([]byte{0, 3, 2, 1, 0, 8, 0, 1, 3, 10, 2, 2, 2, 12, 3, 1, 1, 30, 1, 1, 2, 5, 3, 2, 0, 7, 1, 0, 3, 3, 1, 6, 2, 2, 40, 1, 2, 1, 20})
	f.Add([]byte{1, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 9, 0, 5, 5, 3, 1, 1, 4, 4, 9, 2, 0, 1, 1, 1, 0, 9, 3, 3, 3, 3, 3, 3, 3, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		w := decodeWorld(data)
		const now = 0
		split := (len(w.gangs) + 1) / 2
		p := New(NewTimeline(w.r, w.free, w.running), now, len(w.gangs))
		before := reserveAll(p, w.gangs[:split])
		checkPhysical(t, w, now, w.gangs[:split], before)
		for _, j := range w.jobs {
			steps, ok := p.CanBackfill(j)
			if !ok {
				continue
			}
			p.Commit(j, steps)
			for _, s := range steps {
				a := Alloc{Node: s.Node, Request: j.Classes[s.Class].Request, End: p.endOf(j.Limit)}
				addRow(w.free[int(a.Node)*w.r:(int(a.Node)+1)*w.r], a.Request, -1)
				w.running = append(w.running, a)
			}
			checkPhysical(t, w, now, w.gangs[:split], before)
			again := reserveAll(New(NewTimeline(w.r, w.free, w.running), now, len(w.gangs)), w.gangs[:split])
			for i := range before {
				if before[i].Start >= 0 && (again[i].Start < 0 || again[i].Start > before[i].Start) {
					t.Fatalf("gang %d: start %d before the backfill, %d after (job %+v on %v)", i, before[i].Start, again[i].Start, j, steps)
				}
			}
		}
		// The gangs reserved after the commits see them as a fresh plan does.
		later := reserveAll(p, w.gangs[split:])
		all := append(slices.Clone(before), later...)
		checkPhysical(t, w, now, w.gangs, all)
		fresh := reserveAll(New(NewTimeline(w.r, w.free, w.running), now, len(w.gangs)), w.gangs)
		if sameReservations(fresh[:split], before) && !sameReservations(fresh[split:], later) {
			t.Fatalf("after commits the plan reserved %+v, a fresh plan %+v", later, fresh[split:])
		}
	})
}

func sameReservations(a, b []Reservation) bool {
	return slices.EqualFunc(a, b, func(x, y Reservation) bool {
		return x.Start == y.Start && x.End == y.End && x.Guaranteed == y.Guaranteed && slices.Equal(x.Steps, y.Steps)
	})
}
