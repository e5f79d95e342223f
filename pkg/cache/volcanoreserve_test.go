package cache

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// limitedVolcanoPG is a Volcano PodGroup of queue q with a limit ("" for
// none) on it, as Volcano's controller copies it from the job.
func limitedVolcanoPG(name string, min int32, cpuQ, limit string) *vc.PodGroup {
	pg := mkVolcanoPG("ns", name, min, "q", cpuQ)
	if limit != "" {
		pg.Annotations = map[string]string{runlimit.Annotation: limit}
	}
	return pg
}

// volcanoTrainFixture: three 4-cpu nodes; Volcano jobs r0 (on n0, 20 s)
// and r1 (on n1, ten minutes) run; then train, two 4-cpu members by its
// sums, whose PodGroup names tasks, arrives and a pass at t0+at decides it.
func volcanoTrainFixture(t *testing.T, tasks map[string]int32, at time.Duration) *Cache {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	for _, n := range []string{"n0", "n1", "n2"} {
		c.ApplyNode(logger, mkNode(n, "4"))
	}
	r0, r1 := limitedVolcanoPG("r0", 1, "4", "20"), limitedVolcanoPG("r1", 1, "4", "600")
	train := limitedVolcanoPG("train", 2, "8", "60")
	train.Spec.MinTaskMember = tasks
	withVolcano(t, c, r0, r1, train)
	c.SetGroup(logger, volcano.Spec(r0))
	c.SetGroup(logger, volcano.Spec(r1))
	pass(c, t0)
	podEvent(c, volcanoMember("ns", "r0-0", "r0", cpu("4"), boundTo("n0"), phase(v1.PodRunning), runningSince(t0)))
	podEvent(c, volcanoMember("ns", "r1-0", "r1", cpu("4"), boundTo("n1"), phase(v1.PodRunning), runningSince(t0)))
	c.SetGroup(logger, volcano.Spec(train))
	pass(c, t0.Add(at))
	return c
}

// A Volcano gang has no pods before it is admitted (its controller creates
// them after Inqueue), yet a reservation needs its members' sizes. When
// its PodGroup names at most one task, its members are alike:
// minResources / minMember each, and it is reserved like any gang. Before,
// it got no reservation and no expected start at all (found with Volcano's
// job controller in the loop). With two tasks the split is unknown, and it
// gets none.
func TestVolcanoPodlessGangReserved(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tasks map[string]int32
		want  bool
	}{
		{"one task", map[string]int32{"w": 2}, true},
		{"no tasks", nil, true},
		{"two tasks", map[string]int32{"master": 1, "w": 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := volcanoTrainFixture(t, tc.tasks, 2*time.Second)

			res, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", "train"))
			if !tc.want {
				if ok {
					t.Errorf("train with two tasks reserved %+v, want none: how minResources splits is unknown", res)
				}
				return
			}
			nodes := slices.Sorted(slices.Values(res.Nodes))
			if !ok || res.Start != t0.Unix()+20 || !slices.Equal(nodes, []string{"n0", "n2"}) {
				t.Errorf("train's reservation %+v (ok %v), want from t0+20 (r0's end) on n0 and n2", res, ok)
			}
		})
	}
}

// Judged by sums alone, a Volcano job without a limit was admitted into
// the room a reservation needs (its pods then found every node of it
// held). On its planned members it is held to the backfill rule like any
// job: one that ends before the reservation starts runs now, one without
// a limit waits and says why.
func TestVolcanoPodlessJobBackfills(t *testing.T) {
	c := volcanoTrainFixture(t, nil, time.Second)
	if _, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", "train")); !ok {
		t.Fatalf("premise: train has no reservation")
	}

	for _, tc := range []struct {
		limit string
		ok    bool
	}{{"", false}, {"5", true}} {
		job := limitedVolcanoPG("job"+tc.limit, 1, "4", tc.limit)
		job.CreationTimestamp.Time = t0.Add(time.Second)
		withVolcano(t, c, job)
		c.SetGroup(logger, volcano.Spec(job))
		pass(c, t0.Add(2*time.Second))
		u := unitOf(c, queue.GroupUnit("ns", job.Name))
		d, _ := c.adm.Pending.Decision(queue.GroupUnit("ns", job.Name))
		if u == nil || u.Admitted != tc.ok {
			t.Errorf("podless job with limit %q: unit %+v, want admitted %v", tc.limit, u, tc.ok)
		}
		if !tc.ok && (d.Check != queue.CheckReservation || d.Behind != queue.GroupUnit("ns", "train")) {
			t.Errorf("podless job without a limit: decision %+v, want refused for delaying train's reservation", d)
		}
	}
}

// At a reservation's start the job it waited for may still run (it ends
// at its limit, and its kubelet is late by a moment), and then ends: from
// then on the reserved gang starts, and a younger job without a limit
// neither starts before it nor is reserved into its room while its
// controller creates its pods one by one, nor holds the room the gang's
// pods bind to a moment after its admission. Found with Volcano's
// controller in the loop: the younger job was admitted, or reserved on
// the gang's nodes, the gang's pods found that room held, and the gang
// went back behind it.
func TestVolcanoReservedGangStartsAtItsStart(t *testing.T) {
	trainKey, endlessKey := queue.GroupUnit("ns", "train"), queue.GroupUnit("ns", "endless")
	for _, tc := range []struct {
		name string
		due  bool // a pass at r0's end finds r0 still running
	}{{"r0 ends before the pass at its end", false}, {"r0 outlasts its end by a moment", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := volcanoTrainFixture(t, nil, time.Second)
			endless := limitedVolcanoPG("endless", 1, "4", "")
			endless.CreationTimestamp.Time = t0.Add(time.Second)
			withVolcano(t, c, endless)
			c.SetGroup(logger, volcano.Spec(endless))
			check := func(when string, trainIn bool) {
				t.Helper()
				if u := unitOf(c, endlessKey); u == nil || u.Admitted {
					t.Errorf("%s: endless %+v, want pending", when, u)
				}
				if u := unitOf(c, trainKey); u == nil || u.Admitted != trainIn {
					t.Errorf("%s: train %+v, want admitted %v", when, u, trainIn)
				}
				if res, ok := c.feasible.ReservationOf(endlessKey); trainIn && ok && res.Start < t0.Unix()+60 {
					t.Errorf("%s: endless %s, in train's room before train can end", when, res)
				}
			}
			pass(c, t0.Add(2*time.Second))
			check("before r0's end", false)
			if tc.due {
				pass(c, t0.Add(20*time.Second))
				check("at r0's end, r0 still running", false)
			}
			podDelete(c, volcanoMember("ns", "r0-0", "r0", cpu("4"), boundTo("n0"), phase(v1.PodRunning), runningSince(t0)))
			at := t0.Add(20 * time.Second)
			pass(c, at)
			check("r0 ended", true)
			pass(c, at.Add(300*time.Millisecond))
			check("train admitted, no pod yet", true)
			for i := range 2 {
				pod := volcanoMember("ns", fmt.Sprint("train-w-", i), "train", cpu("4"))
				podEvent(c, pod)
				pass(c, at.Add(time.Duration(i+5)*100*time.Millisecond))
				check(fmt.Sprintf("%d of train's pods created", i+1), true)
				// Its pods bind a moment after its admission: the
				// reservations planned around its end (from its
				// admission) do not keep them out.
				if hs := c.ReservedRoom(pod, at.Add(1300*time.Millisecond)); len(hs) > 0 {
					t.Errorf("%s, placed 1.3 s after train's admission: held out of %+v", pod.Name, hs)
				}
				// Placed long after it (PlacementLag), they would hold
				// endless's room for most of their limit.
				if hs := c.ReservedRoom(pod, at.Add(30*time.Second)); len(hs) == 0 {
					t.Errorf("%s, placed 30 s after train's admission: no holds, want endless's", pod.Name)
				}
			}
		})
	}
}
