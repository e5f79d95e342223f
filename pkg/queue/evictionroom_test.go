package queue

import (
	"reflect"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Room that reclaim and preemption free, counted by admission.

// With a reclaim action, a queue within its deserved share is admitted into
// a cluster that a reclaimable queue fills beyond its own share, up to what
// reclaim can take back; without it, only up to the overcommitted idle room.
func TestAdmitReclaimHeadroom(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	for _, tc := range []struct {
		name        string
		reclaim     bool
		reclaimable bool
		guarantee   resources.List
		want        int
	}{
		{name: "no reclaim: idle room only", reclaim: false, reclaimable: true, want: 3},
		{name: "reclaim: up to the other queue's excess", reclaim: true, reclaimable: true, want: 8},
		{name: "reclaim: a non-reclaimable queue's excess does not count", reclaim: true, reclaimable: false, want: 3},
		{name: "reclaim: a guarantee caps the others (real capability 2)", reclaim: true, reclaimable: true, guarantee: cpu(14000), want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world{
				specs: []Spec{
					{Name: "a", Weight: 1, Reclaimable: tc.reclaimable, Guarantee: tc.guarantee},
					{Name: "b", Weight: 1, Reclaimable: true},
				},
				total:  cpu(16000),
				used:   cpu(16000),
				usage:  map[string]Usage{"a": {Allocated: cpu(16000)}},
				groups: many("b", 8, cpu(1000)),
				opts:   Options{OvercommitFactor: 1.2, Reclaim: tc.reclaim},
			}
			_, res, _ := w.run()
			if got := countByQueue(res)["b"]; got != tc.want {
				t.Fatalf("admitted %d of b's groups, want %d (refused: %+v)", got, tc.want, res.Refused)
			}
		})
	}
}

// With a preemption action, a queue at its share admits a group of higher
// priority than groups it holds, up to what those hold; equal priority is
// refused as before.
func TestAdmitPreemptibleHeadroom(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	held := map[int32]int64{1: 2000, 5: 2000} // priority -> cpu held in queue q
	preemptible := func(queue string, prio int32) resources.List {
		out := resources.List{}
		for p, v := range held {
			if queue == "q" && p < prio {
				out[resources.CPU] += v
			}
		}
		return out
	}
	prio := func(g Group, p int32) Group { g.Priority = p; return g }
	for _, tc := range []struct {
		name   string
		groups []Group
		pre    bool
		want   []string
	}{
		{name: "no preemption: nothing", pre: false,
			groups: []Group{prio(grp("q/hi", "q", 0, cpu(1000)), 10)}, want: []string{}},
		{name: "equal priority: nothing", pre: true,
			groups: []Group{prio(grp("q/eq", "q", 0, cpu(1000)), 1)}, want: []string{}},
		{name: "above priority 1: up to 2 cpu", pre: true,
			groups: []Group{prio(grp("q/a", "q", 0, cpu(1000)), 3), prio(grp("q/b", "q", 1, cpu(1000)), 3), prio(grp("q/c", "q", 2, cpu(1000)), 3)},
			want:   []string{"q/a", "q/b"}},
		{name: "above both: up to 4 cpu", pre: true,
			groups: []Group{prio(grp("q/big", "q", 0, cpu(4000)), 10)}, want: []string{"q/big"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world{
				specs:  []Spec{{Name: "q", Weight: 1}},
				total:  cpu(4000),
				used:   cpu(4000),
				usage:  map[string]Usage{"q": {Allocated: cpu(4000)}},
				groups: tc.groups,
			}
			if tc.pre {
				w.opts.Preemptible = preemptible
			}
			_, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
		})
	}
}

// A queue above its deserved share (not reclaimable, so nobody takes its
// excess) still runs its high-priority work: a group whose request what
// preemption frees in its queue covers takes the lower-priority pods'
// place, and the queue does not grow. Before, fairness refused it for good
// ("remaining deserved share 0"; the randomized harness, seed 4).
func TestAdmitPreemptorOfQueueAboveItsShare(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	for _, tc := range []struct {
		name        string
		request     int64
		freeOnlyFor time.Duration
		want        []string
	}{
		{name: "covered by lower priorities: admitted", request: 7000, want: []string{"q/hi"}},
		{name: "more than lower priorities hold: refused", request: 30000, want: []string{}},
		// Its last plan found no victims: until FreeRoomUntil it counts
		// no eviction room, so it does not hold the queue's room for a
		// plan that cannot be made.
		{name: "free room only after a failed plan: refused", request: 7000, freeOnlyFor: time.Minute, want: []string{}},
		{name: "free room only no longer: admitted", request: 7000, freeOnlyFor: -time.Second, want: []string{"q/hi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := grp("q/hi", "q", 0, cpu(tc.request))
			g.Priority = 1000
			if tc.freeOnlyFor != 0 {
				g.FreeRoomUntil = t0.Add(tc.freeOnlyFor)
			}
			w := world{
				specs: []Spec{{Name: "q", Weight: 1, Reclaimable: false}, {Name: "other", Weight: 8, Reclaimable: true}},
				total: cpu(64000),
				used:  cpu(64000),
				usage: map[string]Usage{
					"q":     {Allocated: cpu(35000)},
					"other": {Allocated: cpu(29000), Pending: cpu(60000)},
				},
				groups: []Group{g},
				opts: Options{OvercommitFactor: 1, Preemptible: func(queue string, prio int32) resources.List {
					if queue == "q" && prio > 0 {
						return cpu(29000)
					}
					return nil
				}},
			}
			_, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v (refused: %+v)", got, tc.want, res.Refused)
			}
			// The cluster is full: whatever is admitted depends on the
			// preemption plan, and says so.
			for _, o := range res.Admitted {
				if !o.Decision.OnPlan {
					t.Errorf("%s admitted into a full cluster without OnPlan", o.Group.Key)
				}
			}
		})
	}
}

// TestAdmitOnFreeRoomIsNotOnPlan: a group admitted on free room does not
// depend on any plan (Decision.OnPlan), even where preemption could free room.
func TestAdmitOnFreeRoomIsNotOnPlan(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	g := grp("q/hi", "q", 0, cpu(2000))
	g.Priority = 1000
	w := world{
		specs:  []Spec{{Name: "q", Weight: 1}},
		total:  cpu(16000),
		used:   cpu(4000),
		usage:  map[string]Usage{"q": {Allocated: cpu(4000)}},
		groups: []Group{g},
		opts:   Options{OvercommitFactor: 1, Preemptible: func(string, int32) resources.List { return cpu(4000) }},
	}
	_, res, _ := w.run()
	if len(res.Admitted) != 1 || res.Admitted[0].Decision.OnPlan {
		t.Errorf("admitted %+v, want q/hi admitted on free room, not on a plan", res.Admitted)
	}
}
