package queue

import (
	"reflect"
	"testing"
	"time"
)

// TestAdmitLend: idle room goes to groups refused only by their deserved
// share, on reclaimable queues, when reclaim runs, and never while a group
// within its share waits for room.
//
// The base: 16 cpu, queues a and b of weight 1 (deserved 8 each with this
// demand). a holds 4 and waits with a 6-cpu group (10 > 8: refused by its
// share, too small for the head exception); b holds 8 and waits with a
// 4-cpu group. 4 cpu are idle and, strictly, nobody may use them.
func TestAdmitLend(t *testing.T) {
	base := func() world {
		return world{
			specs: []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Reclaimable: true}},
			total: cores(16),
			used:  cores(12),
			usage: map[string]Usage{"a": {Allocated: cores(4)}, "b": {Allocated: cores(8)}},
			groups: []Group{
				grp("a/big", "a", 0, cores(6)),
				grp("b/x", "b", 1, cores(4)),
			},
			opts: Options{Reclaim: true, Lend: true},
		}
	}
	tests := []struct {
		name   string
		change func(w *world, f *fakePlacement)
		want   []string // admitted, in order
	}{
		{name: "idle room is lent to the group that fits it", want: []string{"b/x"}},
		{name: "not without Lend", change: func(w *world, _ *fakePlacement) { w.opts.Lend = false }, want: []string{}},
		{name: "not without reclaim, which is what takes a loan back",
			change: func(w *world, _ *fakePlacement) { w.opts.Reclaim = false }, want: []string{}},
		{name: "not to a queue reclaim cannot take from",
			change: func(w *world, _ *fakePlacement) { w.specs[1].Reclaimable = false }, want: []string{}},
		{name: "not when the members cannot be placed on the free nodes",
			change: func(_ *world, f *fakePlacement) { f.fit["b/x"] = 0 }, want: []string{}},
		{name: "not to the queue of a group within its share waiting for room",
			change: func(w *world, f *fakePlacement) {
				// 17 cpu: deserved 8.5 each. a/mid (6 + 2 <= 8.5) cannot be
				// placed and waits; a/x (6 + 3 > 8.5) would fit the 3 idle
				// cpu, but a loan in a's own queue would keep a/mid out
				// (reclaim never takes from a group's own queue). b/y may
				// borrow: a/mid counts b's loan as room reclaim frees.
				w.total, w.used = cores(17), cores(14)
				w.usage["a"] = Usage{Allocated: cores(6)}
				w.groups = []Group{grp("a/mid", "a", 0, cores(2)), grp("a/x", "a", 1, cores(3)), grp("b/y", "b", 2, cores(2))}
				f.fit["a/mid"] = 0
			}, want: []string{"b/y"}},
		{name: "not while a group within its share waits for the cluster's room",
			change: func(w *world, _ *fakePlacement) {
				// 2 cpu idle; a/mid (4 + 3 <= 8) passes the fair-share
				// check and is refused by the cluster check: it gathers
				// the room as work ends.
				w.used = cores(14)
				w.groups = append(w.groups, grp("a/mid", "a", 2, cores(3)), grp("b/y", "b", 3, cores(2)))
			}, want: []string{}},
		{name: "not while a head exempt from its share waits for room",
			change: func(w *world, _ *fakePlacement) {
				// a/huge alone exceeds a's 8.5: admitted at the head without
				// the fair-share check, it counts no reclaim, so it waits for
				// idle room itself, and nothing is lent.
				w.total, w.used = cores(17), cores(14)
				w.usage["a"] = Usage{Allocated: cores(6)}
				w.groups = []Group{grp("a/huge", "a", 0, cores(10)), grp("b/y", "b", 1, cores(2))}
			}, want: []string{}},
		{name: "past a group too large for the idle room, in the queue's order",
			change: func(w *world, _ *fakePlacement) {
				w.groups[1] = grp("b/x", "b", 1, cores(5))
				w.groups = append(w.groups, grp("b/y", "b", 2, cores(3)), grp("b/z", "b", 3, cores(1)))
			}, want: []string{"b/y", "b/z"}},
		{name: "queues take turns, the lower share first",
			change: func(w *world, _ *fakePlacement) {
				// b's 6 fits the 6 idle cpu first (b: 4/8 goes before a:
				// 6/8, whatever the names say); then nothing is left for a.
				w.used = cores(10)
				w.usage = map[string]Usage{"a": {Allocated: cores(6)}, "b": {Allocated: cores(4)}}
				w.groups[0] = grp("a/x", "a", 0, cores(3))
				w.groups[1] = grp("b/big", "b", 1, cores(6))
			}, want: []string{"b/big"}},
	}
	for _, tc := range tests {
		// The pass meets queues in map order: several runs make an order
		// the rules do not decide show up.
		for range 8 {
			lendCase(t, tc.name, tc.change, tc.want, base())
		}
	}
}

func lendCase(t *testing.T, name string, change func(*world, *fakePlacement), want []string, w world) {
	t.Helper()
	tc := struct {
		change func(*world, *fakePlacement)
		want   []string
	}{change, want}
	{
		t.Run(name, func(t *testing.T) {
			f := &fakePlacement{fit: map[string]int{}}
			if tc.change != nil {
				tc.change(&w, f)
			}
			w.opts.Placement = f
			p, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
			for _, o := range res.Admitted {
				if !o.Decision.Lent || o.Decision.OnPlan {
					t.Errorf("%s: decision %+v, want lent on free room", short(o.Group.Key), o.Decision)
				}
				if want := "admitted to queue " + o.Group.Queue + " on idle room lent beyond its deserved share (reclaimable)"; o.Decision.Message() != want {
					t.Errorf("%s: message %q, want %q", short(o.Group.Key), o.Decision.Message(), want)
				}
				if _, pending := p.Decision(o.Group.Key); pending {
					t.Errorf("%s: admitted and still pending", short(o.Group.Key))
				}
				for _, r := range res.Refused {
					if r.Group.Key == o.Group.Key {
						t.Errorf("%s: both admitted and refused", short(o.Group.Key))
					}
				}
			}
			if !reflect.DeepEqual(f.committed, tc.want) && len(tc.want) > 0 {
				t.Errorf("placement committed %v, want %v", f.committed, tc.want)
			}
			for _, q := range res.Queues {
				if q.Admitted+q.Refused > 0 && q.Refused < 0 {
					t.Errorf("queue %s: refused %d", q.Queue, q.Refused)
				}
			}
		})
	}
}

// A loan is counted like any admission: the next pass sees the borrower's
// queue above its share and the idle room gone, so it lends no more, and a
// group that comes within its share counts the loan as reclaimable room.
func TestAdmitLendIsTakenBack(t *testing.T) {
	w := world{
		specs:  []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Reclaimable: true}},
		total:  cores(16),
		used:   cores(12),
		usage:  map[string]Usage{"a": {Allocated: cores(4)}, "b": {Allocated: cores(8)}},
		groups: []Group{grp("a/big", "a", 0, cores(6)), grp("b/x", "b", 1, cores(4)), grp("b/y", "b", 2, cores(4))},
		opts:   Options{Reclaim: true, Lend: true},
	}
	_, res, _ := w.run()
	if got := admittedKeys(res); !reflect.DeepEqual(got, []string{"b/x"}) {
		t.Fatalf("first pass admitted %v, want [b/x]", got)
	}
	// b/x is bound: b holds 12 of its 8, the cluster is full. a's work
	// shrinks to 2, so a/big (2 + 6 <= 8) is within its share: it is
	// admitted on the room reclaim takes back from b.
	w.used = cores(14)
	w.usage = map[string]Usage{"a": {Allocated: cores(2)}, "b": {Allocated: cores(12)}}
	p := NewPending()
	p.Set(grp("a/big", "a", 0, cores(6)))
	p.Set(grp("b/y", "b", 2, cores(4)))
	res, _ = w.pass(p, t0)
	if got := admittedKeys(res); !reflect.DeepEqual(got, []string{"a/big"}) {
		t.Fatalf("second pass admitted %v, want [a/big]", got)
	}
	if d := res.Admitted[0].Decision; d.Lent || !d.OnPlan {
		t.Errorf("a/big: decision %+v, want admitted on reclaim's plan, not lent", d)
	}
	if d, _ := p.Decision(k("b/y")); d.Check != CheckFairness {
		t.Errorf("b/y: %+v, want refused for b's share (no idle room to lend)", d)
	}
}

// The starvation guard holds a queue for its head: the head itself may
// borrow (it goes first, which is what the guard is for); the groups behind
// it, which the held queue's pass did not examine, wait for the next pass.
func TestAdmitLendReservedQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		head int64 // b's head, refused by b's share since t0
		want []string
	}{
		{name: "the head borrows, and the queue is no longer held", head: 4, want: []string{"b/head"}},
		{name: "a head too large for the idle room holds the queue", head: 6, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world{
				specs: []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Reclaimable: true}},
				total: cores(16),
				used:  cores(16), // no idle room yet
				usage: map[string]Usage{"a": {Allocated: cores(4)}, "b": {Allocated: cores(8)}},
				opts:  Options{Reclaim: true, Lend: true, StarvationThreshold: time.Minute},
			}
			p := NewPending()
			p.Set(grp("a/big", "a", 0, cores(6)))
			p.Set(grp("b/head", "b", 1, cores(tc.head)))
			p.Set(grp("b/small", "b", 2, cores(1)))
			if res, _ := w.pass(p, t0); len(res.Admitted) != 0 {
				t.Fatalf("first pass admitted %v with no idle room", admittedKeys(res))
			}
			w.used = cores(11) // 5 idle
			res, _ := w.pass(p, t0.Add(2*time.Minute))
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
			for _, q := range res.Queues {
				if q.Queue == "b" && len(tc.want) > 0 && q.Stop.Check == CheckReserved {
					t.Errorf("queue b still reported reserved for its admitted head: %+v", q.Stop)
				}
				if q.Queue == "b" && len(tc.want) == 0 && q.Stop.Check != CheckReserved {
					t.Errorf("queue b: stop %+v, want reserved for its head", q.Stop)
				}
			}
		})
	}
}

// A pass that admits a group on a plan's room, or runs while one admitted
// so earlier still waits, lends nothing: the plan's victims are the
// youngest pods above their share, which a loan made meanwhile would be.
func TestAdmitNoLoanBesideAPlan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		place bool // a/need's members fit the free nodes (no plan needed)
		plans int  // groups admitted on a plan in earlier passes, waiting
		want  []string
	}{
		{name: "a/need on free room: b/x borrows beside it", place: true, want: []string{"a/need", "b/x"}},
		{name: "a/need on reclaim's room: no loan", place: false, want: []string{"a/need"}},
		{name: "an earlier pass's plan still waits: no loan", place: true, plans: 1, want: []string{"a/need"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 16 cpu x 1.2: a deserves 8 and holds 4; b deserves 8 and
			// holds 10 (2 reclaimable). a/need (4 + 2 <= 8) fits the sum;
			// its members fit the nodes only with reclaim's room when
			// place is false. b/x is refused by b's share and fits the
			// aggregate idle room left.
			f := &fakePlacement{fit: map[string]int{}, planFit: map[string]int{}}
			if !tc.place {
				f.fit["a/need"], f.planFit["a/need"] = 0, 1
			}
			w := world{
				specs: []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Reclaimable: true}},
				total: cores(16),
				used:  cores(14),
				usage: map[string]Usage{"a": {Allocated: cores(4)}, "b": {Allocated: cores(10)}},
				groups: []Group{grp("a/need", "a", 0, cores(2)), grp("a/big", "a", 1, cores(6)),
					grp("b/x", "b", 2, cores(2))},
				opts:  Options{Reclaim: true, Lend: true, OvercommitFactor: 1.2, Placement: f},
				plans: tc.plans,
			}
			_, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
			if onPlan := res.Admitted[0].Decision.OnPlan; onPlan == tc.place {
				t.Errorf("a/need OnPlan %v, want %v", onPlan, !tc.place)
			}
		})
	}
}
