package queue

import (
	"reflect"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// One table test per admission check (checks.go). Each row runs the check's
// method on one group as the pass's first try would (checkCase.run), and a
// refusal is checked again through Admit: the group's Decision after a whole
// pass must be the same refusal. Rows are built so that every check before
// the one under test passes.

// divide is world.pass's division, for a pass the test drives itself.
func (w world) divide(p *Pending) *Shares {
	usage := map[string]Usage{}
	for q, u := range w.usage {
		usage[q] = u
	}
	for _, q := range p.Queues() {
		u := usage[q]
		u.Pending = p.PendingRequest(q)
		usage[q] = u
	}
	return Divide(BuildTree(w.specs), w.total, usage)
}

// beginTestPass starts a pass over w as Admit does, without taking turns.
func (w world) beginTestPass() *Pending {
	p := NewPending()
	for _, g := range w.groups {
		p.Set(g)
	}
	p.beginPass(w.divide(p), Cluster{Allocatable: w.total, Used: w.used, PlansWaiting: w.plans}, w.opts, t0)
	return p
}

// checkCase is one row of a group check's table.
type checkCase struct {
	name string
	w    world
	key  string // the group the check runs for
	// notHead evaluates the group as one behind a refused head.
	notHead bool
	// preempt is evaluate's preemption try: it counts Options.Preemptible.
	preempt bool
	// given sets what earlier checks of the try would have left.
	given func(c *candidate)
	// want is the refusal; the zero Decision means the check passes.
	want    Decision
	verdict verdict
	// On a pass: what the check leaves for the later checks.
	waived, onPlan bool
	plan           Plan
}

// run runs check for tc's group and compares the outcome.
func (tc checkCase) run(t *testing.T, check func(*Pending, *candidate) verdict) {
	t.Helper()
	p := tc.w.beginTestPass()
	e := p.groups[k(tc.key)]
	if e == nil {
		t.Fatalf("no group %s", tc.key)
	}
	node, d, ok := p.checkQueueOpen(e.q)
	if !ok {
		t.Fatalf("queue %s refused: %s", e.q.name, d.Message())
	}
	e.q.node = node
	ps := &p.pass
	ps.pre = growInt64s(ps.pre, ps.r)
	clear(ps.pre)
	if tc.preempt && !p.countPreemptible(e, e.q) {
		t.Fatal("the preemption try frees nothing")
	}
	c := &candidate{e: e, q: e.q, head: !tc.notHead}
	p.countEvictionRoom(c)
	if tc.given != nil {
		tc.given(c)
	}
	v := check(p, c)
	got := Decision{}
	if v != admit {
		got = c.refused
	}
	if !reflect.DeepEqual(got, tc.want) || v != tc.verdict {
		t.Fatalf("got %+v (verdict %d), want %+v (verdict %d)", got, v, tc.want, tc.verdict)
	}
	if v == admit {
		if c.waived != tc.waived || c.plan != tc.plan || c.onPlan != tc.onPlan {
			t.Errorf("left waived %v, plan %v, onPlan %v; want %v, %v, %v", c.waived, c.plan, c.onPlan, tc.waived, tc.plan, tc.onPlan)
		}
		return
	}
	if tc.notHead || tc.preempt || tc.given != nil {
		return // a state a whole pass does not reach for this group alone
	}
	pend, res, _ := tc.w.run()
	for _, o := range res.Admitted {
		if o.Group.Key == k(tc.key) {
			t.Fatalf("Admit admitted %s: %+v", tc.key, o.Decision)
		}
	}
	if d, _ := pend.Decision(k(tc.key)); !reflect.DeepEqual(d, tc.want) {
		t.Errorf("through Admit: %+v, want %+v", d, tc.want)
	}
}

func runChecks(t *testing.T, cases []checkCase, check func(*Pending, *candidate) verdict) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, check) })
	}
}

// cpuDecision is a refusal for cpu; a cluster refusal is bound by the
// cluster's size unless ownCapability says otherwise.
func cpuDecision(c Check, queue string, request, available int64) Decision {
	return Decision{Check: c, Queue: queue, Resource: resources.CPU, Request: request, Available: available, ClusterBound: c == CheckCluster}
}

// ownCapability marks a refusal that a capability the queue (or an
// ancestor) sets itself would make anyway: no node cures it.
func ownCapability(d Decision) Decision { d.ClusterBound = false; return d }

func clusterBound(d Decision) Decision { d.ClusterBound = true; return d }

func TestCheckMembers(t *testing.T) {
	for _, tc := range []struct {
		name               string
		members, minMember int32
		ready              bool
	}{
		{name: "fewer members than minMember", members: 2, minMember: 3},
		{name: "no members yet", members: 0, minMember: 1},
		{name: "exactly minMember", members: 3, minMember: 3, ready: true},
		{name: "more than minMember", members: 4, minMember: 3, ready: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Group{Key: k("ns/g"), Queue: "q", Created: t0, Request: cores(1), Members: tc.members, MinMember: tc.minMember}
			if g.Ready() != tc.ready {
				t.Fatalf("Ready() = %v, want %v", g.Ready(), tc.ready)
			}
			w := world{specs: []Spec{{Name: "q"}}, total: cores(8), groups: []Group{g}}
			p, res, _ := w.run()
			if admitted := len(res.Admitted) == 1; admitted != tc.ready {
				t.Fatalf("admitted %v, want %v", admittedKeys(res), tc.ready)
			}
			if tc.ready {
				return
			}
			want := Decision{Check: CheckMembers, Queue: "q", Members: tc.members, MinMember: tc.minMember}
			if d, _ := p.Decision(k("ns/g")); d != want {
				t.Errorf("Decision %+v, want %+v", d, want)
			}
			if got := p.PendingRequest("q"); len(got) != 0 {
				t.Errorf("a group short of members is demand: %v", got)
			}
		})
	}
}

func TestCheckQueueOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs []Spec
		queue string
		want  Decision // zero: open
	}{
		{name: "an open queue", specs: []Spec{{Name: "q"}}, queue: "q"},
		{name: "State Open", specs: []Spec{{Name: "q", State: StateOpen}}, queue: "q"},
		{name: "a child of a closed parent is open itself",
			specs: []Spec{{Name: "org", State: StateClosed}, {Name: "a", Parent: "org"}}, queue: "a"},
		{name: "a missing queue", specs: []Spec{{Name: "q"}}, queue: "ghost",
			want: Decision{Check: CheckQueueMissing, Queue: "ghost"}},
		{name: "a queue whose parent is missing", specs: []Spec{{Name: "lost", Parent: "nowhere"}}, queue: "lost",
			want: Decision{Check: CheckQueueBroken, Queue: "lost", Detail: `parent queue "nowhere" not found`}},
		{name: "a queue in a parent cycle", specs: []Spec{{Name: "c1", Parent: "c2"}, {Name: "c2", Parent: "c1"}}, queue: "c1",
			want: Decision{Check: CheckQueueBroken, Queue: "c1", Detail: "parent cycle: c1 -> c2 -> c1"}},
		{name: "a closed queue", specs: []Spec{{Name: "shut", State: StateClosed}}, queue: "shut",
			want: Decision{Check: CheckQueueClosed, Queue: "shut"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world{specs: tc.specs, total: cores(8), groups: []Group{grp("ns/g", tc.queue, 0, cores(1))}}
			p := w.beginTestPass()
			node, d, ok := p.checkQueueOpen(p.queues[tc.queue])
			if ok != (tc.want == Decision{}) || d != tc.want {
				t.Fatalf("got %+v (ok %v), want %+v", d, ok, tc.want)
			}
			if ok && p.pass.s.tree.specs[node].Name != tc.queue {
				t.Fatalf("node %d is %s, want %s", node, p.pass.s.tree.specs[node].Name, tc.queue)
			}
			p, res, _ := w.run()
			if admitted := len(res.Admitted) == 1; admitted != ok {
				t.Fatalf("admitted %v, want admitted %v", admittedKeys(res), ok)
			}
			if !ok {
				if d, _ := p.Decision(k("ns/g")); d != tc.want {
					t.Errorf("through Admit: %+v, want %+v", d, tc.want)
				}
			}
		})
	}
}

func TestCheckRequestCanFit(t *testing.T) {
	forGood := func(d Decision) Decision { d.Permanent = true; return d }
	runChecks(t, []checkCase{
		{name: "within every limit",
			w:   world{specs: []Spec{{Name: "q", Capability: cores(8)}}, total: cores(16), groups: []Group{grp("ns/g", "q", 0, cores(4))}},
			key: "ns/g"},
		{name: "what is held already does not count here",
			w: world{specs: []Spec{{Name: "q", Capability: cores(8)}}, total: cores(16), used: cores(16),
				usage: map[string]Usage{"q": {Allocated: cores(7), Inflight: cores(1)}}, groups: []Group{grp("ns/g", "q", 0, cores(8))}},
			key: "ns/g"},
		{name: "above its queue's capability",
			w:    world{specs: []Spec{{Name: "q", Capability: cores(8)}}, total: cores(16), groups: []Group{grp("ns/g", "q", 0, cores(10))}},
			key:  "ns/g",
			want: forGood(cpuDecision(CheckCapability, "q", 10000, 8000)), verdict: permanent},
		{name: "above a parent's capability: the highest queue setting the limit is named",
			w: world{specs: []Spec{{Name: "org", Capability: cores(4)}, {Name: "a", Parent: "org"}}, total: cores(16),
				groups: []Group{grp("ns/g", "a", 0, cores(5))}},
			key:  "ns/g",
			want: forGood(cpuDecision(CheckCapability, "org", 5000, 4000)), verdict: permanent},
		{name: "above a child's tighter capability",
			w: world{specs: []Spec{{Name: "org", Capability: cores(8)}, {Name: "a", Parent: "org", Capability: cores(4)}}, total: cores(16),
				groups: []Group{grp("ns/g", "a", 0, cores(5))}},
			key:  "ns/g",
			want: forGood(cpuDecision(CheckCapability, "a", 5000, 4000)), verdict: permanent},
		// Real capability 8 (the cluster's size) binds below the queue's
		// own 12: more nodes admit a 10-cpu group, never a 24-cpu one.
		{name: "above a capability the cluster's size binds",
			w:    world{specs: []Spec{{Name: "q", Capability: cores(12)}}, total: cores(8), groups: []Group{grp("ns/g", "q", 0, cores(10))}},
			key:  "ns/g",
			want: clusterBound(forGood(cpuDecision(CheckCluster, "q", 10000, 8000))), verdict: permanent},
		{name: "above the queue's own capability too",
			w:    world{specs: []Spec{{Name: "q", Capability: cores(12)}}, total: cores(8), groups: []Group{grp("ns/g", "q", 0, cores(24))}},
			key:  "ns/g",
			want: ownCapability(forGood(cpuDecision(CheckCluster, "q", 24000, 8000))), verdict: permanent},
		{name: "above a parent's own capability, the child setting none",
			w: world{specs: []Spec{{Name: "org", Capability: cores(12)}, {Name: "a", Parent: "org"}}, total: cores(8),
				groups: []Group{grp("ns/g", "a", 0, cores(24))}},
			key:  "ns/g",
			want: ownCapability(forGood(cpuDecision(CheckCluster, "a", 24000, 8000))), verdict: permanent},
		{name: "under overcommit the capability is named, and still its own binds",
			w: world{specs: []Spec{{Name: "q", Capability: cores(12)}}, total: cores(8), groups: []Group{grp("ns/g", "q", 0, cores(24))},
				opts: Options{OvercommitFactor: 1.5}},
			key:  "ns/g",
			want: forGood(cpuDecision(CheckCapability, "q", 24000, 8000)), verdict: permanent},
		{name: "above the cluster's allocatable",
			w:    world{specs: []Spec{{Name: "q"}}, total: cores(16), groups: []Group{grp("ns/g", "q", 0, cores(20))}},
			key:  "ns/g",
			want: clusterBound(forGood(cpuDecision(CheckCluster, "q", 20000, 16000))), verdict: permanent},
		{name: "a resource the cluster lacks",
			w:       world{specs: []Spec{{Name: "q"}}, total: cores(16), groups: []Group{grp("ns/g", "q", 0, resources.List{"example.com/fpga": 1})}},
			key:     "ns/g",
			want:    Decision{Check: CheckCluster, Queue: "q", Resource: "example.com/fpga", Request: 1, Permanent: true, ClusterBound: true},
			verdict: permanent},
	}, (*Pending).checkRequestCanFit)
}

func TestCheckCapability(t *testing.T) {
	parent := func(reclaim bool) world {
		// p may hold 8; c1 (weight 1) deserves 2 and holds 4, c2 (weight
		// 3) deserves 6 and holds 4: p is full, and 2 of it is c1's
		// excess, which reclaim can take back for c2.
		return world{
			specs: []Spec{
				{Name: "p", Capability: cores(8)},
				{Name: "c1", Parent: "p", Weight: 1, Reclaimable: true},
				{Name: "c2", Parent: "p", Weight: 3, Reclaimable: true},
			},
			total:  cores(16),
			used:   cores(8),
			usage:  map[string]Usage{"c1": {Allocated: cores(4)}, "c2": {Allocated: cores(4)}},
			groups: []Group{grp("ns/g", "c2", 0, cores(2))},
			opts:   Options{Reclaim: reclaim},
		}
	}
	preempt := world{
		specs:  []Spec{{Name: "q", Capability: cores(4)}},
		total:  cores(16),
		usage:  map[string]Usage{"q": {Allocated: cores(4)}},
		groups: []Group{grp("ns/g", "q", 0, cores(2))},
		opts:   Options{Preemptible: func(string, int32) resources.List { return cores(2) }},
	}
	full := preempt
	full.opts.Preemptible = nil
	runChecks(t, []checkCase{
		{name: "allocated + inflight + request within capability",
			w: world{specs: []Spec{{Name: "q", Capability: cores(4)}}, total: cores(16),
				usage: map[string]Usage{"q": {Allocated: cores(1), Inflight: cores(1)}}, groups: []Group{grp("ns/g", "q", 0, cores(2))}},
			key: "ns/g"},
		{name: "allocated + inflight + request above capability",
			w: world{specs: []Spec{{Name: "q", Capability: cores(4)}}, total: cores(16),
				usage: map[string]Usage{"q": {Allocated: cores(2), Inflight: cores(1)}}, groups: []Group{grp("ns/g", "q", 0, cores(2))}},
			key:  "ns/g",
			want: cpuDecision(CheckCapability, "q", 2000, 1000), verdict: transient},
		{name: "a parent's capability counts its other children",
			w: world{specs: []Spec{{Name: "org", Capability: cores(4)}, {Name: "a", Parent: "org"}, {Name: "b", Parent: "org"}}, total: cores(16),
				usage: map[string]Usage{"b": {Allocated: cores(3)}}, groups: []Group{grp("ns/g", "a", 0, cores(2))}},
			key:  "ns/g",
			want: cpuDecision(CheckCapability, "org", 2000, 1000), verdict: transient},
		{name: "without reclaim a sibling's excess holds the parent full",
			w: parent(false), key: "ns/g",
			want: cpuDecision(CheckCapability, "p", 2000, 0), verdict: transient},
		{name: "with reclaim a sibling's excess is room at the parent",
			w: parent(true), key: "ns/g"},
		{name: "a full queue refuses without preemption",
			w: full, key: "ns/g",
			want: cpuDecision(CheckCapability, "q", 2000, 0), verdict: transient},
		{name: "the preemption try counts what preemption frees",
			w: preempt, key: "ns/g", preempt: true},
		// ClusterBound says whether more nodes would raise the capability.
		{name: "no capability of its own: the cluster's size binds",
			w: world{specs: []Spec{{Name: "q"}}, total: cores(8),
				usage: map[string]Usage{"q": {Allocated: cores(6)}}, groups: []Group{grp("ns/g", "q", 0, cores(4))}},
			key:  "ns/g",
			want: clusterBound(cpuDecision(CheckCapability, "q", 4000, 2000)), verdict: transient},
		{name: "a capability above the cluster's size: the cluster binds",
			w: world{specs: []Spec{{Name: "q", Capability: cores(100)}}, total: cores(8),
				usage: map[string]Usage{"q": {Allocated: cores(6)}}, groups: []Group{grp("ns/g", "q", 0, cores(4))}},
			key:  "ns/g",
			want: clusterBound(cpuDecision(CheckCapability, "q", 4000, 2000)), verdict: transient},
	}, (*Pending).checkCapability)
}

func TestCheckFairShare(t *testing.T) {
	// a and b share 8 cpu; b holds 4, so a deserves 4 while it asks that much.
	halves := func(allocA int64, req resources.List) world {
		return world{
			specs:  []Spec{{Name: "a"}, {Name: "b"}},
			total:  cores(8),
			usage:  map[string]Usage{"a": {Allocated: cores(allocA)}, "b": {Allocated: cores(4)}},
			groups: []Group{grp("ns/g", "a", 0, req)},
		}
	}
	big := halves(0, cores(6)) // deserves 4, asks 6 alone
	preempt := halves(4, cores(2))
	preempt.opts.Preemptible = func(string, int32) resources.List { return cores(2) }
	// org and other share 8; inside org, b holds 3 of org's 4.
	nested := world{
		specs:  []Spec{{Name: "org"}, {Name: "other"}, {Name: "a", Parent: "org"}, {Name: "b", Parent: "org"}},
		total:  cores(8),
		usage:  map[string]Usage{"other": {Allocated: cores(4)}, "b": {Allocated: cores(3)}},
		groups: []Group{grp("ns/g", "a", 0, cores(2))},
	}
	// org's own groups compete with its child a: of org's 4, a (asking 1)
	// deserves 1 and org's own groups 3, of which they hold 1.
	own := world{
		specs:  []Spec{{Name: "org"}, {Name: "other"}, {Name: "a", Parent: "org"}},
		total:  cores(8),
		usage:  map[string]Usage{"other": {Allocated: cores(4)}, "org": {Allocated: cores(1)}},
		groups: []Group{grp("ns/g", "org", 0, cores(3)), grp("ns/small", "a", 1, cores(1))},
	}
	runChecks(t, []checkCase{
		{name: "within the deserved share", w: halves(2, cores(2)), key: "ns/g"},
		{name: "above the deserved share", w: halves(3, cores(2)), key: "ns/g",
			want: cpuDecision(CheckFairness, "a", 2000, 1000), verdict: transient},
		{name: "a head asking more than its share alone is waived", w: big, key: "ns/g", waived: true},
		{name: "behind a refused head it is not", w: big, key: "ns/g", notHead: true,
			want: cpuDecision(CheckFairness, "a", 6000, 4000), verdict: transient},
		{name: "a parent's share counts its other children", w: nested, key: "ns/g",
			want: cpuDecision(CheckFairness, "org", 2000, 1000), verdict: transient},
		{name: "a parent's own groups have their own part of its share", w: own, key: "ns/g",
			want: cpuDecision(CheckFairness, "org", 3000, 2000), verdict: transient},
		{name: "what preemption frees in full swaps places instead of growing", w: preempt, key: "ns/g", preempt: true},
	}, (*Pending).checkFairShare)
}

func TestCheckClusterRoom(t *testing.T) {
	// Two reclaimable queues share 8 cpu, all of it used: b holds 6 of
	// its 4, so 2 are reclaimable; a holds 2 of its 4 and asks 2.
	reclaim := func(o Options, g Group) world {
		o.Reclaim = true
		return world{
			specs:  []Spec{{Name: "a", Reclaimable: true}, {Name: "b", Reclaimable: true}},
			total:  cores(8),
			used:   cores(8),
			usage:  map[string]Usage{"a": {Allocated: cores(2)}, "b": {Allocated: cores(6)}},
			groups: []Group{g},
			opts:   o,
		}
	}
	ask := grp("ns/g", "a", 0, cores(2))
	freeOnly := ask
	freeOnly.FreeRoomUntil = t0.Add(time.Minute)
	noReclaim := reclaim(Options{}, ask)
	noReclaim.opts.Reclaim = false
	preempt := noReclaim
	preempt.opts.Preemptible = func(string, int32) resources.List { return cores(2) }
	gpu := resources.List{resources.CPU: 8000, "nvidia.com/gpu": 4}
	runChecks(t, []checkCase{
		{name: "idle room covers the request",
			w:   world{specs: []Spec{{Name: "q"}}, total: cores(8), used: cores(4), groups: []Group{grp("ns/g", "q", 0, cores(4))}},
			key: "ns/g"},
		{name: "idle room is short",
			w:    world{specs: []Spec{{Name: "q"}}, total: cores(8), used: cores(6), groups: []Group{grp("ns/g", "q", 0, cores(4))}},
			key:  "ns/g",
			want: cpuDecision(CheckCluster, "q", 4000, 2000), verdict: transient},
		{name: "every queue's inflight counts, a deleted queue's too",
			w: world{specs: []Spec{{Name: "q"}}, total: cores(4), usage: map[string]Usage{"deleted": {Inflight: cores(3)}},
				groups: []Group{grp("ns/g", "q", 0, cores(2))}},
			key:  "ns/g",
			want: cpuDecision(CheckCluster, "q", 2000, 1000), verdict: transient},
		{name: "overcommit raises the limit",
			w: world{specs: []Spec{{Name: "q"}}, total: cores(4), used: cores(4), groups: []Group{grp("ns/g", "q", 0, cores(2))},
				opts: Options{OvercommitFactor: 1.5}},
			key: "ns/g"},
		{name: "only the requested resources are compared",
			w:   world{specs: []Spec{{Name: "q"}}, total: gpu, used: resources.List{"nvidia.com/gpu": 4}, groups: []Group{grp("ns/g", "q", 0, cores(2))}},
			key: "ns/g"},
		{name: "without reclaim a full cluster has no room", w: noReclaim, key: "ns/g",
			want: cpuDecision(CheckCluster, "a", 2000, 0), verdict: transient},
		{name: "a group within its share counts what reclaim takes back",
			w: reclaim(Options{}, ask), key: "ns/g", plan: PlanReclaim, onPlan: true},
		{name: "not in its window of free room only", w: reclaim(Options{}, freeOnly), key: "ns/g",
			want: cpuDecision(CheckCluster, "a", 2000, 0), verdict: transient},
		{name: "not when it took the head exception", w: reclaim(Options{}, ask), key: "ns/g",
			given: func(c *candidate) { c.waived = true },
			want:  cpuDecision(CheckCluster, "a", 2000, 0), verdict: transient},
		{name: "the preemption try counts what preemption frees", w: preempt, key: "ns/g", preempt: true,
			plan: PlanPreempt, onPlan: true},
	}, (*Pending).checkClusterRoom)
}

func TestCheckPlacement(t *testing.T) {
	gang := Group{Key: k("ns/g"), Queue: "q", Created: t0, Request: cores(4), Members: 4, MinMember: 4}
	placed := func(fit, planFit map[string]int) world {
		return world{specs: []Spec{{Name: "q"}}, total: cores(16), groups: []Group{gang},
			opts: Options{Placement: &fakePlacement{fit: fit, planFit: planFit}}}
	}
	reclaimPlan := func(c *candidate) { c.plan = PlanReclaim }
	runChecks(t, []checkCase{
		{name: "no Placement: nothing to check", w: world{specs: []Spec{{Name: "q"}}, total: cores(16), groups: []Group{gang}}, key: "ns/g"},
		{name: "every member fits the free room", w: placed(nil, nil), key: "ns/g"},
		{name: "members do not fit the free room",
			w: placed(map[string]int{"ns/g": 3}, nil), key: "ns/g",
			want: Decision{Check: CheckPlacement, Queue: "q", Members: 3, MinMember: 4}, verdict: transient},
		{name: "no plan's room is counted without a plan",
			w: placed(map[string]int{"ns/g": 3}, map[string]int{"ns/g": 4}), key: "ns/g",
			want: Decision{Check: CheckPlacement, Queue: "q", Members: 3, MinMember: 4}, verdict: transient},
		{name: "they fit with the room of the plan the group counted",
			w: placed(map[string]int{"ns/g": 3}, map[string]int{"ns/g": 4}), key: "ns/g",
			given: reclaimPlan, plan: PlanReclaim, onPlan: true},
		{name: "they fit the free room: the plan is not needed",
			w: placed(nil, nil), key: "ns/g", given: reclaimPlan, plan: PlanReclaim},
		{name: "they fit neither",
			w: placed(map[string]int{"ns/g": 1}, map[string]int{"ns/g": 2}), key: "ns/g", given: reclaimPlan,
			want: Decision{Check: CheckPlacement, Queue: "q", Members: 2, MinMember: 4,
				Detail: "with the room reclaim and preemption can free"}, verdict: transient},
	}, (*Pending).checkPlacement)
}

func TestCheckQuota(t *testing.T) {
	quota := func(g Group) (bool, string) {
		if g.Key.Namespace == "full" {
			return false, "namespace full: exceeded quota: cpu"
		}
		return true, ""
	}
	w := world{specs: []Spec{{Name: "q"}}, total: cores(8),
		groups: []Group{grp("full/g", "q", 0, cores(1)), grp("ok/g", "q", 1, cores(1))}, opts: Options{Quota: quota}}
	noQuota := w
	noQuota.opts.Quota = nil
	runChecks(t, []checkCase{
		{name: "no Quota: nothing to check", w: noQuota, key: "full/g"},
		{name: "the callback agrees", w: w, key: "ok/g"},
		{name: "the callback refuses: the group's own reason",
			w: w, key: "full/g",
			want: Decision{Check: CheckQuota, Queue: "q", Detail: "namespace full: exceeded quota: cpu"}, verdict: personal},
	}, (*Pending).checkQuota)
}
