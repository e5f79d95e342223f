package queue

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakePlanner is a fakePlacement that is also a Planner: it records the
// groups the pass holds reservations for, in call order, and reports a group
// delayed by the reservation of delayed[group], starting at start. Like the
// real one, it is only asked after its Check refused the group (fit table).
type fakePlanner struct {
	*fakePlacement
	delayed map[string]string
	start   time.Time
	held    []string
	// reserves are the groups Hold finds a reservation for.
	reserves map[string]bool
}

func (f *fakePlanner) Hold(g Group) bool {
	f.held = append(f.held, short(g.Key))
	return f.reserves[short(g.Key)]
}

func (f *fakePlanner) Delayed(g Group) (Key, time.Time, bool) {
	r, ok := f.delayed[short(g.Key)]
	if !ok {
		return Key{}, time.Time{}, false
	}
	return k(r), f.start, true
}

// newPlanner refuses the unfit groups' placement (no member fits) and
// delays the groups of delayed.
func newPlanner(unfit []string, delayed map[string]string) *fakePlanner {
	f := &fakePlanner{fakePlacement: &fakePlacement{fit: map[string]int{}, planFit: map[string]int{}},
		delayed: delayed, start: t0.Add(time.Hour)}
	for _, key := range unfit {
		f.fit[key] = 0
	}
	return f
}

// The pass asks for reservations only for what more room would start: the
// first groups of each queue refused for room, up to ReservationsPerQueue,
// in the order it meets them, anew each pass. A share, a capability the
// queue set itself, or a request nothing can hold reserves nothing.
func TestAdmitPlannerHold(t *testing.T) {
	// b has the higher priority: the pass serves it first, whatever the names.
	specs := []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Priority: 1, Reclaimable: true}}
	five := []Group{grp("a/0", "a", 0, cores(1)), grp("a/1", "a", 1, cores(1)), grp("a/2", "a", 2, cores(1)),
		grp("b/0", "b", 3, cores(1)), grp("b/1", "b", 4, cores(1))}
	capped := []Spec{{Name: "a", Weight: 1, Capability: cores(5)}, {Name: "b", Weight: 1}}
	for _, tc := range []struct {
		name    string
		specs   []Spec
		usage   map[string]Usage
		groups  []Group
		unfit   []string
		rpq     int  // Options.ReservationsPerQueue
		passes  int  // 0 means 1
		plain   bool // a Placement that is not a Planner
		want    []string
		refused map[string]Check // the premise: why the pass refuses these
		bound   string           // the premise: a refusal that is ClusterBound
	}{
		{name: "the first room refusal of each queue, in pass order", specs: specs, groups: five,
			unfit: []string{"a/0", "a/1", "b/0"}, want: []string{"b/0", "a/0"},
			refused: map[string]Check{"a/0": CheckPlacement, "a/1": CheckPlacement, "b/0": CheckPlacement}},
		{name: "ReservationsPerQueue 2: the first two of each queue", specs: specs, groups: five, rpq: 2,
			unfit: []string{"a/0", "a/1", "a/2", "b/0"}, want: []string{"b/0", "a/0", "a/1"}},
		{name: "negative: none", specs: specs, groups: five, rpq: -1, unfit: []string{"a/0", "b/0"}, want: []string{}},
		{name: "every pass has its own count", specs: specs, groups: five, passes: 2,
			unfit: []string{"a/0"}, want: []string{"a/0", "a/0"}},
		{name: "not a group refused by its queue's share", specs: specs,
			usage:  map[string]Usage{"a": {Allocated: cores(4)}, "b": {Allocated: cores(8)}},
			groups: []Group{grp("a/big", "a", 0, cores(6)), grp("a/x", "a", 1, cores(1)), grp("b/y", "b", 2, cores(1))},
			unfit:  []string{"a/x"}, want: []string{"a/x"},
			refused: map[string]Check{"a/big": CheckFairness, "a/x": CheckPlacement}},
		{name: "not a group refused by its queue's own capability", specs: capped,
			usage:  map[string]Usage{"a": {Allocated: cores(4)}},
			groups: []Group{grp("a/cap", "a", 0, cores(2)), grp("a/x", "a", 1, cores(1))},
			unfit:  []string{"a/x"}, want: []string{"a/x"},
			refused: map[string]Check{"a/cap": CheckCapability, "a/x": CheckPlacement}},
		// realCap of a is what the cluster leaves after b's guarantee: the
		// cluster's size binds (Decision.ClusterBound), yet room other
		// queues free never starts a/cap, only a's own pods ending, so a
		// reservation of room would slide with the clock.
		{name: "not a group refused by a capability the cluster's size binds", specs: []Spec{{Name: "a", Weight: 1},
			{Name: "b", Weight: 1, Guarantee: cores(10)}},
			usage:  map[string]Usage{"a": {Allocated: cores(4)}},
			groups: []Group{grp("a/cap", "a", 0, cores(4)), grp("a/x", "a", 1, cores(1))},
			unfit:  []string{"a/x"}, want: []string{"a/x"},
			refused: map[string]Check{"a/cap": CheckCapability, "a/x": CheckPlacement}, bound: "a/cap"},
		// Nothing carves a's capability: it is the cluster's total, and
		// the room the plan waits for is what lifts it.
		{name: "a group refused by a capability only the cluster's size sets", specs: []Spec{{Name: "a", Weight: 1}},
			usage:  map[string]Usage{"a": {Allocated: cores(14)}},
			groups: []Group{grp("a/big", "a", 0, cores(4))}, want: []string{"a/big"},
			refused: map[string]Check{"a/big": CheckCapability}, bound: "a/big"},
		{name: "not a group larger than the cluster (permanent)", specs: specs,
			groups: []Group{grp("a/huge", "a", 0, cores(32)), grp("a/x", "a", 1, cores(1))},
			unfit:  []string{"a/x"}, want: []string{"a/x"},
			refused: map[string]Check{"a/huge": CheckCluster, "a/x": CheckPlacement}},
		{name: "a Placement that is not a Planner works as before", specs: specs, groups: five, plain: true,
			unfit:   []string{"a/0", "b/0"},
			refused: map[string]Check{"a/0": CheckPlacement, "b/0": CheckPlacement}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanner(tc.unfit, nil)
			w := world{specs: tc.specs, total: cores(16), usage: tc.usage, groups: tc.groups,
				opts: Options{Reclaim: true, ReservationsPerQueue: tc.rpq, Placement: f}}
			if tc.plain {
				w.opts.Placement = f.fakePlacement
			}
			p, res, _ := w.run()
			for range tc.passes - 1 {
				res, _ = w.pass(p, t0)
			}
			for key, want := range tc.refused {
				if d, _ := p.Decision(k(key)); d.Check != want || d.Admitted {
					t.Errorf("%s: %+v, want refused by %v (admitted %v)", key, d, want, admittedKeys(res))
				}
			}
			if d, _ := p.Decision(k(tc.bound)); tc.bound != "" && !d.ClusterBound {
				t.Errorf("%s: %+v, want ClusterBound", tc.bound, d)
			}
			if got := f.held; !reflect.DeepEqual(got, tc.want) && (len(got) > 0 || len(tc.want) > 0) {
				t.Errorf("held %v, want %v", got, tc.want)
			}
		})
	}
}

// A group whose members fit only by starting before a reservation is refused
// with CheckReservation naming the reservation and its start; the plan's
// room still admits it when it fits there. Without a reservation in the
// way, the placement refusal is the old one.
func TestCheckPlacementReservation(t *testing.T) {
	gang := Group{Key: k("ns/g"), Queue: "q", Created: t0, Request: cores(4), Members: 4, MinMember: 4}
	ahead := map[string]string{"ns/g": "ns/head"}
	placed := func(fit, planFit int, delayed map[string]string) world {
		f := newPlanner(nil, delayed)
		f.fit["ns/g"], f.planFit["ns/g"] = fit, planFit
		return world{specs: []Spec{{Name: "q"}}, total: cores(16), groups: []Group{gang}, opts: Options{Placement: f}}
	}
	reclaimPlan := func(c *candidate) { c.plan = PlanReclaim }
	reservation := Decision{Check: CheckReservation, Queue: "q", Behind: k("ns/head"), Since: t0.Add(time.Hour)}
	runChecks(t, []checkCase{
		{name: "delayed: refused for the reservation", w: placed(0, 0, ahead), key: "ns/g",
			want: reservation, verdict: transient},
		{name: "not delayed: the placement refusal", w: placed(3, 0, nil), key: "ns/g",
			want: Decision{Check: CheckPlacement, Queue: "q", Members: 3, MinMember: 4}, verdict: transient},
		{name: "its members fit: Delayed is not asked", w: placed(4, 0, ahead), key: "ns/g"},
		{name: "delayed, but the plan's room places it", w: placed(0, 4, ahead), key: "ns/g",
			given: reclaimPlan, plan: PlanReclaim, onPlan: true},
		{name: "delayed, and the plan's room does not place it either", w: placed(0, 3, ahead), key: "ns/g",
			given: reclaimPlan, want: reservation, verdict: transient},
	}, (*Pending).checkPlacement)
}

// Through a whole pass: a group delayed on the free nodes is admitted on the
// room reclaim frees when its members fit there (the plan's room is not the
// reservation's); when they do not, the refusal is the reservation's, not
// rewritten as a placement refusal with the plan's counts.
func TestAdmitReservationOnPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		planFit int
		want    []string
	}{
		{name: "the plan places it", planFit: 2, want: []string{"b/gang"}},
		{name: "not even with the plan", planFit: 1, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := grp("b/gang", "b", 0, cores(2))
			g.Members, g.MinMember = 2, 2
			f := newPlanner([]string{"b/gang"}, map[string]string{"b/gang": "a/head"})
			f.planFit["b/gang"] = tc.planFit
			w := world{ // a holds the whole cluster, 8 of it above its share
				specs:  []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Reclaimable: true}},
				total:  cores(16),
				used:   cores(16),
				usage:  map[string]Usage{"a": {Allocated: cores(16)}},
				groups: []Group{g},
				opts:   Options{OvercommitFactor: 1, Reclaim: true, Placement: f},
			}
			p, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
			if len(tc.want) > 0 {
				if d := res.Admitted[0].Decision; !d.OnPlan {
					t.Errorf("b/gang: %+v, want admitted on the plan's room", d)
				}
				return
			}
			want := Decision{Check: CheckReservation, Queue: "b", Behind: k("a/head"), Since: t0.Add(time.Hour)}
			if d, _ := p.Decision(k("b/gang")); !reflect.DeepEqual(d, want) {
				t.Errorf("b/gang: %+v, want %+v", d, want)
			}
		})
	}
}

// A group refused for a reservation waits for room like any placement
// refusal: it is its queue's head, so it is held itself when it is the
// first room refusal, and the starvation guard reserves the queue for it.
func TestAdmitReservationRefusalIsTheHead(t *testing.T) {
	f := newPlanner([]string{"q/0"}, map[string]string{"q/0": "other/head"})
	w := world{
		specs:  []Spec{{Name: "q", Weight: 1}},
		total:  cores(16),
		groups: []Group{grp("q/0", "q", 0, cores(1)), grp("q/1", "q", 1, cores(1))},
		opts:   Options{Placement: f, StarvationThreshold: time.Minute},
	}
	p, res, _ := w.run()
	if got := admittedKeys(res); !reflect.DeepEqual(got, []string{"q/1"}) {
		t.Fatalf("admitted %v, want backfill of q/1 before the threshold", got)
	}
	if d, _ := p.Decision(k("q/0")); d.Check != CheckReservation || !d.WaitsForRoom() {
		t.Fatalf("q/0: %+v, want a reservation refusal waiting for room", d)
	}
	if !reflect.DeepEqual(f.held, []string{"q/0"}) {
		t.Errorf("held %v, want [q/0]: the first room refusal of q", f.held)
	}
	// Past the threshold the head q/0 reserves q: q/2 waits behind it.
	p.Set(grp("q/2", "q", 2, cores(1)))
	res, _ = w.pass(p, t0.Add(2*time.Minute))
	if len(res.Admitted) != 0 || len(res.Queues) != 1 {
		t.Fatalf("admitted %v, queues %+v; want nothing past the starving head", admittedKeys(res), res.Queues)
	}
	want := Decision{Check: CheckReserved, Queue: "q", Behind: k("q/0"), Since: t0}
	if stop := res.Queues[0].Stop; !reflect.DeepEqual(stop, want) {
		t.Errorf("q stopped with %+v, want %+v", stop, want)
	}
}

// The reservation refusal's name, text and kind: an Event reason suffix and
// metric label, a message naming the reservation and when it starts, and a
// refusal more room cures (so autoscalers see it).
func TestDecisionReservation(t *testing.T) {
	if s := CheckReservation.String(); s != "Reservation" {
		t.Errorf("CheckReservation.String() = %q, want Reservation", s)
	}
	d := Decision{Check: CheckReservation, Queue: "q", Behind: k("ns/head"), Since: t0.Add(90 * time.Minute).In(time.FixedZone("x", 3600))}
	if d.Check.String() != "Reservation" {
		t.Errorf("Decision.Check = %v, want Reservation", d.Check)
	}
	msg := d.Message()
	for _, part := range []string{"delay the reservation", "pg:ns/head", "2030-01-01T01:30:00Z"} {
		if !strings.Contains(msg, part) {
			t.Errorf("Message() = %q, want it to mention %q", msg, part)
		}
	}
	// A refusal for room is told as "waiting for room: " + Message() by
	// the cache; the message must not say it again.
	if strings.Contains(msg, "waiting for room") {
		t.Errorf("Message() = %q says 'waiting for room', which its verdict prefixes", msg)
	}
	if !d.WaitsForRoom() {
		t.Error("WaitsForRoom() = false, want true: more room cures a delay")
	}
	if d.Admitted = true; d.WaitsForRoom() {
		t.Error("an admitted decision waits for nothing")
	}
}

// A starving head that holds a reservation over time is guarded by that
// reservation alone: its queue is not stopped (q/1, which the planner lets
// start, is admitted) and no empty nodes are held for it
// (Placement.Reserve is not asked). Without a reservation the guard stops
// the queue and holds empty nodes, as before.
func TestAdmitStarvingHeadGuardedByReservation(t *testing.T) {
	for _, tc := range []struct {
		name         string
		reserves     bool
		wantAdmitted []string
		wantReserved []string
	}{
		{"held over time", true, []string{"q/1"}, nil},
		{"no reservation over time", false, nil, []string{"q/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanner([]string{"q/0"}, nil)
			f.reservable = map[string]bool{"q/0": true}
			f.reserves = map[string]bool{"q/0": tc.reserves}
			w := world{
				specs:  []Spec{{Name: "q", Weight: 1}},
				total:  cores(16),
				groups: []Group{grp("q/0", "q", 0, cores(1))},
				opts:   Options{Placement: f, StarvationThreshold: time.Minute},
			}
			p, _, _ := w.run()
			p.Set(grp("q/1", "q", 1, cores(1)))
			res, _ := w.pass(p, t0.Add(2*time.Minute))
			if got := admittedKeys(res); !slices.Equal(got, tc.wantAdmitted) {
				t.Errorf("admitted %v, want %v", got, tc.wantAdmitted)
			}
			stopped := len(res.Queues) == 1 && res.Queues[0].Stop.Check == CheckReserved
			if stopped != (tc.wantAdmitted == nil) {
				t.Errorf("queues %+v: reserved for the head = %v, want %v", res.Queues, stopped, tc.wantAdmitted == nil)
			}
			if !reflect.DeepEqual(f.reserved, tc.wantReserved) {
				t.Errorf("Placement.Reserve held empty nodes for %v, want %v", f.reserved, tc.wantReserved)
			}
		})
	}
}
