package cache

import (
	"slices"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// An unbounded job admitted into room no reservation needs keeps that room
// in the passes before it binds: the next pass places it where the backfill
// check let it in, not first-fit onto a node the reservation needs, which
// would push the reservation it was admitted around later (random harness
// seed 9677: a gang admitted around a reservation moved it 11 s later in
// the next pass, before any of its pods bound).
//
// n0 (4 cpu) is empty, n1 (6 cpu) runs a 4-cpu pod until t0+100, n2 (2
// cpu) is empty. Gang train (two 4-cpu members) fits only at t0+100, on n0
// and n1. An unbounded 2-cpu pod may use n1's slack (6 - 4) or n2, never
// n0, which first-fit would pick.
func TestInflightKeepsItsBackfillRoom(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n0", "4"))
	c.ApplyNode(logger, mkNode("n1", "6"))
	c.ApplyNode(logger, mkNode("n2", "2"))
	podEvent(c, single("ns", "run1", cpu("4"), boundTo("n1"), limit(100), runningSince(t0)))
	train := addTrain(c)
	trainKey := queue.GroupUnit("ns", train[0].Labels[gangbook.PodGroupLabel])
	endless := single("ns", "endless", cpu("2"), createdAt(t0.Add(2*time.Second)))
	podEvent(c, endless)

	for _, at := range []time.Duration{10, 11, 12} {
		pass(c, t0.Add(at*time.Second))
		wantAdmitted(t, c, verdict{true, ""}, endless)
		res, ok := c.feasible.ReservationOf(trainKey)
		nodes := slices.Sorted(slices.Values(res.Nodes))
		if !ok || res.Start != t0.Unix()+100 || !slices.Equal(nodes, []string{"n0", "n1"}) {
			t.Fatalf("pass at t0+%d: train's reservation %+v, want from t0+100 on n0 and n1", at, res)
		}
	}
}
