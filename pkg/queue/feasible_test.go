package queue

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Children of a parent with a capability, weights 1 and 3: the weight-1
// child holds 4 of the parent's 8 cpu (it came first); the weight-3 child
// deserves 6 and holds 4. With reclaim, the weight-3 child is admitted into
// the room its sibling holds above its deserved 2 (2 more cpu), which
// reclaim then takes back; without, the parent's capability refuses it.
func TestAdmitChildReclaimsSiblingUnderParentCapability(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	for _, tc := range []struct {
		name        string
		reclaim     bool
		reclaimable bool
		want        int
		msg         string
	}{
		{name: "reclaim: the sibling's excess is room", reclaim: true, reclaimable: true, want: 2,
			msg: "queue p: cpu request 1 exceeds remaining capability 0"},
		{name: "no reclaim: the parent is full", reclaim: false, reclaimable: true, want: 0,
			msg: "queue p: cpu request 1 exceeds remaining capability 0"},
		{name: "a non-reclaimable sibling keeps its room", reclaim: true, reclaimable: false, want: 0,
			msg: "queue p: cpu request 1 exceeds remaining capability 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world{
				specs: []Spec{
					{Name: "p", Weight: 1, Reclaimable: true, Capability: cpu(8000)},
					{Name: "c1", Parent: "p", Weight: 1, Reclaimable: tc.reclaimable},
					{Name: "c3", Parent: "p", Weight: 3, Reclaimable: true},
				},
				total: cpu(16000),
				used:  cpu(8000),
				usage: map[string]Usage{"c1": {Allocated: cpu(4000)}, "c3": {Allocated: cpu(4000)}},
				// c1 keeps asking too, so its deserved share is 2, not capped by demand.
				groups: append(many("c3", 6, cpu(1000)), many("c1", 2, cpu(1000))...),
				opts:   Options{OvercommitFactor: 1, Reclaim: tc.reclaim},
			}
			p, res, s := w.run()
			if d := s.Deserved("c3")[resources.CPU]; d != 6000 {
				t.Fatalf("c3 deserves %d, want 6000", d)
			}
			if got := countByQueue(res); got["c3"] != tc.want || got["c1"] != 0 {
				t.Fatalf("admitted %v, want c3 %d and c1 0 (refused: %+v)", got, tc.want, res.Refused)
			}
			d, _ := p.Decision(k("c3/5"))
			if d.Message() != tc.msg {
				t.Errorf("c3's last group: %q, want %q", d.Message(), tc.msg)
			}
		})
	}
}

// fakePlacement answers the placement check from a table: how many members of
// a group fit, per key, plain and with a plan.
type fakePlacement struct {
	fit, planFit map[string]int
	reservable   map[string]bool
	committed    []string
	reserved     []string
	plans        []Plan // the plan of every Check, in order
}

func (f *fakePlacement) Check(g Group, plan Plan) (int, int) {
	want := int(g.MinMember)
	f.plans = append(f.plans, plan)
	if n, ok := f.fit[short(g.Key)]; ok && plan == PlanNone {
		return n, want
	}
	if n, ok := f.planFit[short(g.Key)]; ok && plan != PlanNone {
		return n, want
	}
	if _, ok := f.fit[short(g.Key)]; ok {
		return f.fit[short(g.Key)], want
	}
	return want, want
}
func (f *fakePlacement) Commit(g Group) { f.committed = append(f.committed, short(g.Key)) }
func (f *fakePlacement) Reserve(g Group) bool {
	if f.reservable[short(g.Key)] {
		f.reserved = append(f.reserved, short(g.Key))
		return true
	}
	return false
}

// A gang whose members cannot be placed is refused with a clear reason and
// does not stop its queue: a group behind it that fits is admitted
// (backfill). Past the starvation threshold, a head refused by placement
// reserves its queue (and its room, through Reserve) only when it could be
// placed on empty nodes.
func TestAdmitPlacement(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	gang := grp("q/gang", "q", 0, cpu(15000))
	gang.Members, gang.MinMember = 5, 5
	pod := grp("q/pod", "q", 1, cpu(4000))
	for _, tc := range []struct {
		name       string
		reservable bool
		at         time.Duration
		want       []string
		reserved   []string
		podMsg     string
	}{
		{name: "backfill before the threshold", reservable: true, at: 0, want: []string{"q/pod"}},
		{name: "starving and feasible on the total: reserved", reservable: true, at: 10 * time.Minute, want: []string{},
			reserved: []string{"q/gang"}, podMsg: "queue q is reserved for pg:q/gang"},
		{name: "starving but never placeable: no reservation", reservable: false, at: 10 * time.Minute, want: []string{"q/pod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePlacement{fit: map[string]int{"q/gang": 4}, reservable: map[string]bool{"q/gang": tc.reservable}}
			w := world{
				specs:  []Spec{{Name: "q", Weight: 1}},
				total:  cpu(16000),
				groups: []Group{gang, pod},
				opts:   Options{OvercommitFactor: 1, Placement: f, StarvationThreshold: 5 * time.Minute},
			}
			p := NewPending()
			for _, g := range w.groups {
				p.Set(g)
			}
			res, _ := w.pass(p, t0)
			if tc.at > 0 {
				// The first refusal starts the clock; the pod is admitted at
				// t0 in every case, so set it again to see the guard.
				if len(res.Admitted) == 1 {
					p.Set(pod)
				}
				res, _ = w.pass(p, t0.Add(tc.at))
			}
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(f.committed[len(f.committed)-len(tc.want):], tc.want) {
				t.Errorf("committed %v, want the admitted %v last", f.committed, tc.want)
			}
			if !reflect.DeepEqual(f.reserved, tc.reserved) && (len(f.reserved) > 0 || len(tc.reserved) > 0) {
				t.Errorf("reserved %v, want %v", f.reserved, tc.reserved)
			}
			d, _ := p.Decision(k("q/gang"))
			if want := "members not placeable: 4/5 fit on the free nodes"; d.Message() != want {
				t.Errorf("gang: %q, want %q", d.Message(), want)
			}
			if tc.podMsg != "" {
				if d, _ := p.Decision(k("q/pod")); !strings.HasPrefix(d.Message(), tc.podMsg) {
					t.Errorf("pod: %q, want prefix %q", d.Message(), tc.podMsg)
				}
			}
		})
	}
}

// A group the free room cannot place but a plan it is entitled to can is
// admitted; the message names the plan when even that fails.
func TestAdmitPlacementWithPlan(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	for _, tc := range []struct {
		name    string
		planFit int
		want    []string
		msg     string
	}{
		{name: "the plan places it", planFit: 2, want: []string{"b/gang"}},
		{name: "not even with the plan", planFit: 1, want: []string{},
			msg: "members not placeable: 1/2 fit with the room reclaim and preemption can free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := grp("b/gang", "b", 0, cpu(2000))
			g.Members, g.MinMember = 2, 2
			f := &fakePlacement{fit: map[string]int{"b/gang": 0}, planFit: map[string]int{"b/gang": tc.planFit}}
			w := world{
				specs:  []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Reclaimable: true}},
				total:  cpu(16000),
				used:   cpu(16000),
				usage:  map[string]Usage{"a": {Allocated: cpu(16000)}},
				groups: []Group{g},
				opts:   Options{OvercommitFactor: 1, Reclaim: true, Placement: f},
			}
			p, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
			if tc.msg != "" {
				if d, _ := p.Decision(k("b/gang")); d.Message() != tc.msg {
					t.Errorf("gang: %q, want %q", d.Message(), tc.msg)
				}
			}
		})
	}
}

// Reclaim and preemption are separate plans: a group within its queue's
// deserved share only by counting the lower-priority pod preemption would
// evict, in a cluster with room only by counting what reclaim would take
// from another queue, is refused. No plan CalderaReclaim runs frees both,
// so once admitted it could never be placed, and it would hold its
// queue's share (a singleton is never released) while the queue's groups
// that reclaim could place wait behind it. The placement check is asked
// about one plan at a time.
func TestAdmitDoesNotCombineReclaimAndPreemption(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	hi := grp("b/hi", "b", 0, cpu(8000))
	hi.Priority = 1000
	small := grp("b/small", "b", 1, cpu(2000))
	f := &fakePlacement{fit: map[string]int{"b/hi": 0, "b/small": 0}, planFit: map[string]int{"b/hi": 1, "b/small": 1}}
	w := world{
		// 16 cpu, both queues asking 9 or more: 8 each. a holds 15, 7
		// above its share; b holds 1 cpu of priority 0.
		specs: []Spec{{Name: "a", Weight: 1, Reclaimable: true}, {Name: "b", Weight: 1, Reclaimable: true}},
		total: cpu(16000),
		used:  cpu(16000),
		usage: map[string]Usage{
			"a": {Allocated: cpu(15000)},
			"b": {Allocated: cpu(1000)},
		},
		groups: []Group{hi, small},
		opts: Options{OvercommitFactor: 1, Reclaim: true, Placement: f,
			Preemptible: func(queue string, prio int32) resources.List {
				if queue == "b" && prio > 0 {
					return cpu(1000)
				}
				return nil
			}},
	}
	p, res, _ := w.run()
	if got, want := admittedKeys(res), []string{"b/small"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("admitted %v, want %v (refused: %+v)", got, want, res.Refused)
	}
	if d, _ := p.Decision(k("b/hi")); d.Check != CheckFairness {
		t.Errorf("b/hi: %q, want the fairness refusal of the reclaim try", d.Message())
	}
	for _, pl := range f.plans {
		if pl == PlanPreempt {
			t.Errorf("the placement check asked with the preemption plan %v: no try should have reached it", f.plans)
		}
	}
}
