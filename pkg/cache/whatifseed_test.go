package cache

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// What-if's fresh cache, seeded with the live scheduler's reservation of
// train (queue default), refuses an unbounded pod of urgent, a queue
// visited before default, for delaying it, as the live scheduler's next
// pass does (TestReservationHoldsAcrossPasses); unseeded, it admits the
// pod into the room train is reserved.
func TestSeededReservationHoldsEarlierQueues(t *testing.T) {
	at := t0.Add(100 * time.Second) // train's start: when run0 ends
	for _, seeded := range []bool{false, true} {
		c, _, _ := reservationsFixture(t, singletons, mkQueue("urgent", queuePriority(10)))
		endless := single("ns", "endless", cpu("4"), inQueue("urgent"), createdAt(t0.Add(2*time.Second)))
		podEvent(c, endless)
		if seeded {
			skipped := c.SeedReservations([]admission.ReservationSeed{
				{Group: gangbook.GroupKey{Namespace: "ns", Name: "gone"}, Start: at},
				{Group: gangbook.GroupKey{Namespace: "ns", Name: "train"}, Start: at},
				{Group: gangbook.GroupKey{Namespace: "ns", Name: "train"}, Start: at},
			})
			want := map[gangbook.GroupKey]string{{Namespace: "ns", Name: "gone"}: admission.SeedNoUnit, {Namespace: "ns", Name: "train"}: admission.SeedTwice}
			if len(skipped) != len(want) || skipped[gangbook.GroupKey{Namespace: "ns", Name: "gone"}] != admission.SeedNoUnit {
				t.Errorf("skipped seeds %v, want %v", skipped, want)
			}
		}
		pass(c, t0.Add(10*time.Second))
		ok, msg := c.Admitted(endless)
		if !seeded {
			if !ok {
				t.Fatalf("unseeded: endless refused (%q): the test shows nothing", msg)
			}
			continue
		}
		if ok || !strings.Contains(msg, "delay the reservation of pg:ns/train from "+at.UTC().Format(time.RFC3339)) {
			t.Errorf("seeded: endless Admitted = %v %q, want refused for delaying train's reservation", ok, msg)
		}
		// Planned first, train keeps its live start and nodes; endless
		// is reserved after it.
		res := c.Reservations()
		if len(res) == 0 || res[0].Unit != "pg:ns/train" || !res[0].Start.Equal(at) ||
			!slices.Equal(slices.Sorted(slices.Values(res[0].Nodes)), []string{"n0", "n2"}) {
			t.Errorf("reservations kept %+v, want train's first, from t0+100 on n0, n2", res)
		}
	}
}

// A seed whose group the snapshot already counts as admitted is left out:
// a published expected start outlives admission until the status writer
// removes it.
func TestSeedOfAdmittedGroupSkipped(t *testing.T) {
	c, _, _ := reservationsFixture(t, singletons)
	podDelete(c, single("ns", "run0", cpu("4"), boundTo("n0"), limit(100), runningSince(t0)))
	pass(c, t0.Add(10*time.Second)) // train fits now: admitted
	skipped := c.SeedReservations([]admission.ReservationSeed{{Group: gangbook.GroupKey{Namespace: "ns", Name: "train"}, Start: t0.Add(100 * time.Second)}})
	if skipped[gangbook.GroupKey{Namespace: "ns", Name: "train"}] != admission.SeedAdmitted {
		t.Errorf("skipped %v, want train as admitted", skipped)
	}
	if len(c.Reservations()) != 0 {
		t.Errorf("reservations %+v after seeding an admitted group", c.Reservations())
	}
}
