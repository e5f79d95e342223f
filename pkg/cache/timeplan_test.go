package cache

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

func limit(seconds int) podOpt { return annotated(runlimit.Annotation, fmt.Sprint(seconds)) }

func runningSince(t time.Time) podOpt {
	return func(p *v1.Pod) { p.Status.StartTime = &metav1.Time{Time: t} }
}

// reservationsFixture: three 4-cpu nodes; n0 runs a 4-cpu pod until t0+100,
// n1 one until t0+300, n2 is empty. Gang train (two 4-cpu members, the
// oldest group) fits only once n0 is empty, at t0+100, on n0 and n2.
func reservationsFixture(t *testing.T, opts admission.Options, more ...*qapi.Queue) (*Cache, []*v1.Pod, *fakeHandle) {
	c, h, _ := newAdmissionCache(t, opts, append([]*qapi.Queue{mkQueue("default")}, more...)...)
	for i := range 3 {
		c.ApplyNode(logger, mkNode(fmt.Sprint("n", i), "4"))
	}
	podEvent(c, single("ns", "run0", cpu("4"), boundTo("n0"), limit(100), runningSince(t0)))
	podEvent(c, single("ns", "run1", cpu("4"), boundTo("n1"), limit(300), runningSince(t0)))
	return c, addTrain(c), h
}

// addTrain adds gang train, two 4-cpu members, and returns its members.
func addTrain(c *Cache) []*v1.Pod {
	addPG(c, mkPG("ns", "train", 2))
	var train []*v1.Pod
	for i := range 2 {
		p := memberOf("ns", fmt.Sprint("train", i), "train", cpu("4"))
		train = append(train, p)
		podEvent(c, p)
	}
	return train
}

// The head that cannot start now gets a reservation at the earliest time
// its members fit, on named nodes; an unbounded job may not take that room
// now, and says why.
func TestReservationRefusesUnbounded(t *testing.T) {
	c, train, _ := reservationsFixture(t, singletons)
	endless := single("ns", "endless", cpu("4"), createdAt(t0.Add(2*time.Second)))
	podEvent(c, endless)
	pass(c, t0.Add(10*time.Second))

	if ok, msg := c.Admitted(train[0]); ok || !strings.Contains(msg, "exceeds remaining capability") {
		t.Errorf("train: Admitted = %v %q, want refused for room", ok, msg)
	}
	res := c.feasible.Timed
	if len(res) != 1 || res[0].Key != queue.GroupUnit("ns", "train") {
		t.Fatalf("reservations %+v, want one for the train gang", res)
	}
	if got, want := res[0].Start, t0.Unix()+100; got != want {
		t.Errorf("reservation starts at t0%+d, want t0+100 (when run0 ends)", got-t0.Unix())
	}
	if nodes := slices.Sorted(slices.Values(res[0].Nodes)); !slices.Equal(nodes, []string{"n0", "n2"}) {
		t.Errorf("reserved nodes %v, want [n0 n2]", nodes)
	}
	if !res[0].Guaranteed {
		t.Errorf("reservation not guaranteed, though every pod it waits for declares a limit")
	}
	ok, msg := c.Admitted(endless)
	if ok || !strings.Contains(msg, "delay the reservation of pg:ns/train") {
		t.Errorf("endless: Admitted = %v %q, want refused for delaying train's reservation", ok, msg)
	}
	if waits, msg := awaitingRoom(c, endless); !waits || !strings.HasPrefix(msg, "waiting for room: starting now would delay") {
		t.Errorf("endless: awaitingRoom = %v %q, want the delay once after 'waiting for room: '", waits, msg)
	}
	// The gang is told when and where it will start, in its verdict and
	// in the expected start its PodGroup gets.
	at := t0.Add(100 * time.Second)
	if _, msg := c.Admitted(train[0]); !strings.HasSuffix(msg, "; reserved from "+at.UTC().Format(time.RFC3339)+" on n2, n0") &&
		!strings.HasSuffix(msg, "; reserved from "+at.UTC().Format(time.RFC3339)+" on n0, n2") {
		t.Errorf("train's verdict %q does not say when and where it is reserved", msg)
	}
	c.mu.Lock()
	c.noticePendingLocked(t0.Add(10 * time.Second))
	c.mu.Unlock()
	var eta *time.Time
	for _, w := range c.AdmissionWrites() {
		if w.PodGroup != nil && w.PodGroup.Name == "train" {
			eta = w.ExpectedStart
		}
	}
	if eta == nil || !eta.Equal(at) {
		t.Errorf("train's write has expected start %v, want %v", eta, at)
	}
	if v, _ := c.AdmissionOf(train[0]); v.ExpectedStart == nil || !v.ExpectedStart.Equal(at) || len(v.ReservedNodes) != 2 {
		t.Errorf("what-if's view of train: expected start %v on %v, want %v on two nodes", v.ExpectedStart, v.ReservedNodes, at)
	}
	if g := dumpedGroup(t, c, "ns/train"); g.ExpectedStart == nil || !g.ExpectedStart.Equal(at) || len(g.ReservedNodes) != 2 || g.EstimatedStart != nil {
		t.Errorf("the dump's train: expected start %v on %v (estimated %v), want %v on two nodes", g.ExpectedStart, g.ReservedNodes, g.EstimatedStart, at)
	}
}

// A job whose limit ends before the reservation starts may use its room
// now (backfill); one that ends after it may not.
func TestBackfillEndsBeforeReservation(t *testing.T) {
	for _, tc := range []struct {
		limit int
		ok    bool
	}{{60, true}, {89, true}, {91, false}, {600, false}} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			c, _, _ := reservationsFixture(t, singletons)
			job := single("ns", "job", cpu("4"), limit(tc.limit), createdAt(t0.Add(time.Second)))
			podEvent(c, job)
			pass(c, t0.Add(10*time.Second)) // the reservation starts at t0+100
			if ok, msg := c.Admitted(job); ok != tc.ok {
				t.Errorf("a job of %d s at t0+10: Admitted = %v %q, want %v", tc.limit, ok, msg, tc.ok)
			}
		})
	}
}

// Without reservations (ReservationsPerQueue < 0) admission decides for
// this instant: the unbounded pod takes the room the gang will need.
func TestReservationsOff(t *testing.T) {
	opts := singletons
	opts.ReservationsPerQueue = -1
	c, _, _ := reservationsFixture(t, opts)
	endless := single("ns", "endless", cpu("4"), createdAt(t0.Add(2*time.Second)))
	podEvent(c, endless)
	pass(c, t0.Add(10*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, endless)
	if len(c.feasible.Timed) != 0 {
		t.Errorf("reservations %+v with reservations off", c.feasible.Timed)
	}
}

// A reservation holds from pass to pass: in the next pass a pod of another
// queue, visited before the gang's queue, is refused too.
func TestReservationHoldsAcrossPasses(t *testing.T) {
	c, _, _ := reservationsFixture(t, singletons, mkQueue("urgent", queuePriority(10)))
	pass(c, t0.Add(10*time.Second))
	if len(c.feasible.Timed) != 1 {
		t.Fatalf("reservations %+v after the first pass, want train's", c.feasible.Timed)
	}
	endless := single("ns", "endless", cpu("4"), inQueue("urgent"), createdAt(t0.Add(2*time.Second)))
	podEvent(c, endless)
	pass(c, t0.Add(20*time.Second))
	if ok, msg := c.Admitted(endless); ok || !strings.Contains(msg, "delay the reservation") {
		t.Errorf("endless in the next pass: Admitted = %v %q, want refused", ok, msg)
	}
}

// When the room comes back the gang starts, and its reservation ends.
func TestReservationEndsWithAdmission(t *testing.T) {
	c, train, _ := reservationsFixture(t, singletons)
	pass(c, t0.Add(10*time.Second))
	podDelete(c, single("ns", "run0", cpu("4"), boundTo("n0"), limit(100), runningSince(t0)))
	pass(c, t0.Add(100*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, train...)
	if len(c.feasible.Timed) != 0 {
		t.Errorf("reservations %+v after the gang was admitted", c.feasible.Timed)
	}
}

// The Filter's view: a pod that would outlast the reservation sees the
// room held on its nodes, and what running pods free there by its start;
// the gang's own members and a pod that ends first see nothing.
func TestReservedRoom(t *testing.T) {
	c, train, _ := reservationsFixture(t, singletons)
	pass(c, t0.Add(10*time.Second))
	now := t0.Add(10 * time.Second)
	start := t0.Add(100 * time.Second)

	endless := single("ns", "endless", cpu("4"))
	got := c.ReservedRoom(endless, now)
	if len(got) != 2 {
		t.Fatalf("ReservedRoom(endless) = %+v, want holds on n0 and n2", got)
	}
	for node, released := range map[string]int64{"n0": 4000, "n2": 0} {
		hs := got[node]
		if len(hs) != 1 || !hs[0].Start.Equal(start) || hs[0].Reservation != "pg:ns/train" ||
			cpuOf(hs[0].Need) != 4000 || cpuOf(hs[0].ReleasedBy) != released {
			t.Errorf("holds on %s = %+v, want train's 4 cpu from t0+100, %d m released by then", node, hs, released)
		}
	}
	if got := c.ReservedRoom(train[1], now); got != nil {
		t.Errorf("ReservedRoom(a member of train) = %+v, want nothing: its own reservation", got)
	}
	if got := c.ReservedRoom(single("ns", "short", cpu("4"), limit(60)), now); got != nil {
		t.Errorf("ReservedRoom(a pod ending at t0+70) = %+v, want nothing", got)
	}
	if got := c.ReservedRoom(single("ns", "late", cpu("4"), limit(60)), t0.Add(50*time.Second)); len(got) != 2 {
		t.Errorf("ReservedRoom(a pod ending at t0+110) = %+v, want the holds", got)
	}
}

// A pod that was to give its room back by the reservation's start and ends
// early gives it back now: between passes the Filter sees it in the node's
// free room, so the hold no longer counts it as released by the start.
// Counted twice, a pod that outlasts the reservation was let into room the
// reservation needs (random harness seed 9419: the start moved later after
// a job ended early and another bound onto its node).
func TestReservedRoomForgetsPodsEndedEarly(t *testing.T) {
	c, _, _ := reservationsFixture(t, singletons)
	pass(c, t0.Add(10*time.Second))
	endless := single("ns", "endless", cpu("4"))
	if hs := c.ReservedRoom(endless, t0.Add(10*time.Second))["n0"]; len(hs) != 1 || cpuOf(hs[0].ReleasedBy) != 4000 {
		t.Fatalf("premise: holds on n0 = %+v, want run0's 4 cpu released by the start", hs)
	}
	podDelete(c, single("ns", "run0", cpu("4"), boundTo("n0"), limit(100), runningSince(t0)))
	hs := c.ReservedRoom(endless, t0.Add(11*time.Second))["n0"]
	if len(hs) != 1 || cpuOf(hs[0].ReleasedBy) != 0 || cpuOf(hs[0].Need) != 4000 {
		t.Errorf("holds on n0 after run0 ended early = %+v, want 4 cpu needed, nothing released by the start", hs)
	}
}

// A backfilled job admitted around a reservation but not yet bound holds
// its room until its limit from when it was admitted, not from each pass:
// counted from each pass's now, a job the scheduler does not place at once
// ended later at every pass, and the reservation behind it slid with the
// clock (random harness seed 9419).
func TestInflightEndsFromAdmission(t *testing.T) {
	c, train, _ := reservationsFixture(t, singletons)
	short := single("ns", "short", cpu("4"), limit(85), createdAt(t0.Add(2*time.Second)))
	podEvent(c, short)
	pass(c, t0.Add(10*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, short)
	for _, at := range []int64{10, 20, 30} {
		if at > 10 {
			pass(c, t0.Add(time.Duration(at)*time.Second))
		}
		res, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", train[0].Labels[gangbook.PodGroupLabel]))
		if !ok || res.Start != t0.Unix()+100 {
			t.Errorf("pass at t0+%d: train's reservation %+v, want from t0+100 (short, unplaced, ends by t0+95)", at, res)
		}
	}
}

// The timeline is kept from pass to pass: a running pod whose limit is
// shortened moves the reservation earlier in the next pass, as a timeline
// built afresh would.
func TestReservationFollowsChangedEnds(t *testing.T) {
	c, _, _ := reservationsFixture(t, singletons)
	pass(c, t0.Add(10*time.Second))
	if got := c.feasible.Timed; len(got) != 1 || got[0].Start != t0.Unix()+100 {
		t.Fatalf("reservations %+v, want train's from t0+100", got)
	}
	podEvent(c, single("ns", "run1", cpu("4"), boundTo("n1"), limit(50), runningSince(t0)))
	pass(c, t0.Add(20*time.Second))
	got := c.feasible.Timed
	if len(got) != 1 || got[0].Start != t0.Unix()+50 {
		t.Fatalf("reservations %+v after run1's limit became 50 s, want train's from t0+50", got)
	}
	if nodes := slices.Sorted(slices.Values(got[0].Nodes)); !slices.Equal(nodes, []string{"n1", "n2"}) {
		t.Errorf("reserved nodes %v, want [n1 n2]", nodes)
	}
}

// Room a reservation gives back is no cluster event, so the pass itself
// sends the admitted pods still waiting for a node back to a scheduling
// cycle: the Filter may have kept them out of that room.
func TestEndedReservationRetriesAdmittedPods(t *testing.T) {
	c, train, h := reservationsFixture(t, singletons)
	backfillShort(t, c)
	activatedPods(h)
	pass(c, t0.Add(11*time.Second))
	if got := activatedPods(h); len(got) != 0 {
		t.Errorf("activated %v while the reservation holds", got)
	}
	delPG(c, mkPG("ns", "train", 2))
	for _, p := range train {
		podDelete(c, p)
	}
	activatedPods(h)
	pass(c, t0.Add(12*time.Second))
	if got := activatedPods(h); !slices.Contains(got, "ns/short") {
		t.Errorf("activated %v when train's reservation ended, want the admitted ns/short", got)
	}
}

// A backfilled job admitted but not yet bound holds its room only until
// its limit ends: the next pass keeps the reservation it was let in
// around where it was, rather than moving it past a room it thinks is
// never freed.
func TestBackfillKeepsTheReservationNextPass(t *testing.T) {
	c, _, _ := reservationsFixture(t, singletons)
	backfillShort(t, c)
	pass(c, t0.Add(11*time.Second))
	if got := c.feasible.Timed; len(got) != 1 || got[0].Start != t0.Unix()+100 {
		t.Errorf("reservations %+v in the pass after the backfill, want train's from t0+100 still", got)
	}
}

// A limit on the PodGroup counts for every member: a one-member gang whose
// PodGroup says 60 s backfills around the reservation, one without waits.
func TestPodGroupLimitBackfills(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ann   map[string]string
		admit bool
	}{
		{"PodGroup limit of 60 s", map[string]string{runlimit.Annotation: "60"}, true},
		{"no limit", nil, false},
		{"an invalid limit, ignored", map[string]string{runlimit.Annotation: "1m"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := reservationsFixture(t, singletons)
			addPG(c, mkPG("ns", "job", 1, func(pg *v1alpha1.PodGroup) {
				pg.Annotations = tc.ann
				pg.CreationTimestamp = metav1.NewTime(t0)
			}))
			p := memberOf("ns", "job-0", "job", cpu("4"))
			podEvent(c, p)
			pass(c, t0.Add(10*time.Second))
			if ok, msg := c.Admitted(p); ok != tc.admit {
				t.Errorf("Admitted = %v %q, want %v", ok, msg, tc.admit)
			}
		})
	}
}

// backfillShort admits, at t0+10, a 4-cpu job of 60 s into the fixture's
// reserved room (it ends before the reservation's t0+100), unbound.
func backfillShort(t *testing.T, c *Cache) {
	t.Helper()
	short := single("ns", "short", cpu("4"), limit(60), createdAt(t0.Add(time.Second)))
	podEvent(c, short)
	pass(c, t0.Add(10*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, short)
}

// Past the starvation threshold, a head with a reservation over time is
// guarded by that reservation alone: its queue is not stopped, so a job of
// its own queue that ends before the reservation starts still runs now,
// and one that would not is refused for delaying it.
func TestStarvingHeadGuardedByItsReservation(t *testing.T) {
	opts := singletons
	opts.StarvationThreshold = time.Second
	c, train, _ := reservationsFixture(t, opts)
	pass(c, t0.Add(5*time.Second)) // train heads the queue from here
	long := single("ns", "long", cpu("4"), limit(600), createdAt(t0.Add(time.Second)))
	short := single("ns", "short", cpu("4"), limit(60), createdAt(t0.Add(2*time.Second)))
	podEvent(c, short)
	podEvent(c, long)
	pass(c, t0.Add(10*time.Second)) // train has waited past the threshold
	if ok, _ := c.Admitted(train[0]); ok {
		t.Fatal("train admitted, want it waiting for its reservation")
	}
	wantAdmitted(t, c, verdict{true, ""}, short)
	if ok, msg := c.Admitted(long); ok || !strings.Contains(msg, "delay the reservation of pg:ns/train") {
		t.Errorf("long: Admitted = %v %q, want refused for delaying train's reservation", ok, msg)
	}
}

// A group holding a reservation for later is not let in now for holding
// it: starting early it must still delay no one else's reservation. Here
// job (600 s, behind train in its queue, which reserves for two) is
// reserved for t0+300 on n1, after train's t0+100 on n0 and n2; n2 is free
// now, but job there would still run at t0+100 and push train back.
func TestOwnLaterReservationIsNoBackfill(t *testing.T) {
	opts := singletons
	opts.ReservationsPerQueue = 2
	c, train, _ := reservationsFixture(t, opts)
	job := single("ns", "job", cpu("4"), limit(600), createdAt(t0.Add(time.Second)))
	podEvent(c, job)
	pass(c, t0.Add(10*time.Second))
	if ok, msg := c.Admitted(job); ok || !strings.Contains(msg, "delay the reservation of pg:ns/train") {
		t.Fatalf("job in the first pass: Admitted = %v %q, want refused for train's reservation", ok, msg)
	}
	if _, ok := c.feasible.ReservationOf(queue.PodUnit("ns", "job")); !ok {
		t.Fatalf("job holds no reservation after the first pass; reservations %+v", c.feasible.Timed)
	}
	pass(c, t0.Add(20*time.Second))
	if ok, msg := c.Admitted(job); ok || !strings.Contains(msg, "delay the reservation of pg:ns/train") {
		t.Errorf("job in the next pass: Admitted = %v %q, want refused: it would delay train", ok, msg)
	}
	if res, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", "train")); !ok || res.Start != t0.Unix()+100 {
		t.Errorf("train's reservation %+v (kept %v), want it still from t0+100", res, ok)
	}
	if ok, _ := c.Admitted(train[0]); ok {
		t.Errorf("train admitted at t0+20, before its room comes back")
	}
}

// A backfilled job starts some time into the second it was admitted in,
// and the kubelet counts its limit from that start rounded up: planned to
// end by the reservation's start, it must still end by then once bound.
// At t0+10.5 a 90 s job would end at t0+101 (bound at t0+10.7), a second
// into train's reservation from t0+100; an 89 s one ends in time.
func TestBackfillEndsByReservationOnceBound(t *testing.T) {
	for _, tc := range []struct {
		limit int
		ok    bool
	}{{89, true}, {90, false}} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			c, _, _ := reservationsFixture(t, singletons)
			job := single("ns", "job", cpu("4"), limit(tc.limit), createdAt(t0.Add(time.Second)))
			podEvent(c, job)
			pass(c, t0.Add(10500*time.Millisecond))
			ok, msg := c.Admitted(job)
			if ok != tc.ok {
				t.Errorf("a job of %d s at t0+10.5: Admitted = %v %q, want %v", tc.limit, ok, msg, tc.ok)
			}
			if !ok {
				return
			}
			bound := job.DeepCopy()
			boundTo("n2")(bound)
			runningSince(t0.Add(10700 * time.Millisecond))(bound)
			podEvent(c, bound)
			pass(c, t0.Add(12*time.Second))
			if res, kept := c.feasible.ReservationOf(queue.GroupUnit("ns", "train")); !kept || res.Start != t0.Unix()+100 {
				t.Errorf("train's reservation after the job bound: %+v (kept %v), want it still from t0+100", res, kept)
			}
		})
	}
}

// A group whose members fit the free room now, refused only because it
// would delay a reservation, is not admitted on a preemption plan's room
// either: CalderaReclaim finds no victims for a group that fits without
// evictions, so the admission would be released at once. job (priority
// 10, unbounded) comes before train in their queue; run0 and run1 are
// lower-priority pods of the same queue that preemption could take.
func TestDelayedGroupNotAdmittedOnPlan(t *testing.T) {
	c, _, _ := reservationsFixture(t, singletons)
	enableEvictions(c, false, true)
	pass(c, t0.Add(10*time.Second))
	if _, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", "train")); !ok {
		t.Fatalf("train holds no reservation after the first pass")
	}
	job := single("ns", "job", cpu("4"), priority(10), createdAt(t0.Add(11*time.Second)))
	podEvent(c, job)
	pass(c, t0.Add(12*time.Second))
	if ok, msg := c.Admitted(job); ok || !strings.Contains(msg, "delay the reservation of pg:ns/train") {
		t.Errorf("job: Admitted = %v %q, want refused for train's reservation (on any room)", ok, msg)
	}
}

// A group admitted on a preemption plan's room is held to the
// reservations as the CalderaReservation Filter will hold its members:
// urgent (two 4-cpu members, priority 10, above run0 and run1) fits only
// with evictions. Unbounded, it may take only n1, the one node train's
// reservation (n0 and n2 from t0+100) does not need, and is refused; were
// it admitted it would evict, and the Filter would then keep it off n0
// and n2. With a limit that ends before t0+100 it may use them.
func TestPlanAdmissionHeldToReservations(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []podOpt
		ok   bool
	}{
		{"unbounded", nil, false},
		{"ends before the reservation", []podOpt{limit(50)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := reservationsFixture(t, singletons)
			enableEvictions(c, false, true)
			pass(c, t0.Add(10*time.Second))
			if _, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", "train")); !ok {
				t.Fatalf("train holds no reservation after the first pass")
			}
			addPG(c, mkPG("ns", "urgent", 2, pgCreatedAt(t0.Add(11*time.Second))))
			var first *v1.Pod
			for i := range 2 {
				p := memberOf("ns", fmt.Sprint("urgent", i), "urgent", append([]podOpt{cpu("4"), priority(10)}, tc.opts...)...)
				podEvent(c, p)
				first = p
			}
			pass(c, t0.Add(12*time.Second))
			if ok, msg := c.Admitted(first); ok != tc.ok {
				t.Errorf("urgent: Admitted = %v %q, want %v", ok, msg, tc.ok)
			}
		})
	}
}

// When room comes back early, so that the group holding a kept reservation
// fits now, a group of a queue visited before it is still held to it: it
// may not take the room the reserved group can start in, and push that
// group's start later.
func TestKeptReservationThatFitsNowHoldsEarlierQueues(t *testing.T) {
	c, train, _ := reservationsFixture(t, singletons, mkQueue("urgent", queuePriority(10)))
	// Neither default's share nor n3 (too small for anyone) refuses train.
	c.ApplyQueue(mkQueue("default", weight(100)))
	c.ApplyNode(logger, mkNode("n3", "2"))
	pass(c, t0.Add(10*time.Second))
	key := queue.GroupUnit("ns", "train")
	if res, ok := c.feasible.ReservationOf(key); !ok || res.Start != t0.Unix()+100 {
		t.Fatalf("premise: train's reservation %+v (%v), want from t0+100", res, ok)
	}
	rival := single("ns", "rival", cpu("4"), inQueue("urgent"), limit(200), createdAt(t0.Add(12*time.Second)))
	podEvent(c, rival)
	podDelete(c, single("ns", "run0", cpu("4"), boundTo("n0"), limit(100), runningSince(t0)))
	pass(c, t0.Add(21*time.Second))
	ok, msg := c.Admitted(rival)
	trainOK, trainMsg := c.Admitted(train[0])
	if ok || !trainOK {
		t.Errorf("after run0 ended early: rival Admitted = %v %q, train = %v %q; want train admitted into the room it was reserved, rival refused",
			ok, msg, trainOK, trainMsg)
	}
}
