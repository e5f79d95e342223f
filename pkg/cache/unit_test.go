package cache

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/admission"
	qfake "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned/fake"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// The tests in this file pin that the cache's state follows the objects, so
// that every decision sees a gang as it is: an object replaced under the same
// name, a PodGroup installed before its members, a lowered minMember, members
// this scheduler cannot place, and queue names no Queue object has.

// withUID is a copy of p with another UID: the same name, recreated.
func withUID(uid string) podOpt { return func(p *v1.Pod) { p.UID = types.UID(uid) } }

// A pod deleted and recreated under its name while the watch was broken
// reaches the informers' relist as one update with a new UID. The old UID
// must not stay counted: as a bound member (Permit would pass the gang with a
// ghost) nor as its queue's usage.
func TestReplacedPodIsDeleteThenAdd(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 2))
	p0, p1 := memberOf("ns", "p0", "g"), memberOf("ns", "p1", "g")
	podEvent(c, p0)
	podEvent(c, p1)
	pass(c, t0)
	bound := next(p0, boundTo("n1"), phase(v1.PodRunning))
	c.onUnfinishedPodUpdate(logger, p0, bound)
	c.onAnyPodUpdate(p0, bound)
	wantCounts(t, c, key("ns", "g"), &gang.Counts{Members: 2, Active: 2, Pending: 1, Placed: 1, Bound: 1, Running: 1})
	wantUsage(t, c, "default", 1, 1)

	// The relist: p0 was deleted and created again, pending, new UID.
	again := next(p0, withUID("uid-ns-p0-again"))
	c.onUnfinishedPodUpdate(logger, bound, again)
	c.onAnyPodUpdate(bound, again)
	wantCounts(t, c, key("ns", "g"), &gang.Counts{Members: 2, Active: 2, Pending: 2})
	wantUsage(t, c, "default", 0, 2)
	wantConsistent(t, c, "after the relist")

	// The finished-member informer: a Succeeded pod replaced by a failed one.
	done := next(p1, boundTo("n1"), phase(v1.PodSucceeded))
	c.ApplyFinishedPod(logger, nil, done)
	c.onUnfinishedPodDelete(logger, p1)
	failed := next(p1, withUID("uid-ns-p1-again"), boundTo("n1"), phase(v1.PodFailed))
	c.ApplyFinishedPod(logger, done, failed)
	wantCounts(t, c, key("ns", "g"), &gang.Counts{Members: 2, Active: 1, Pending: 1, Bound: 1, Failed: 1})
}

// A PodGroup recreated under its name (a new UID) starts fresh: it inherits
// neither the old object's backoff, first attempt and reason, nor its
// admission, whether the informer delivers a delete and an add or, after a
// watch gap, one update.
func TestRecreatedPodGroupStartsFresh(t *testing.T) {
	for _, relist := range []bool{false, true} {
		t.Run(fmt.Sprintf("relist=%v", relist), func(t *testing.T) {
			c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
			c.ApplyNode(logger, mkNode("n1", "16"))
			old := mkPG("ns", "g", 2)
			addPG(c, old)
			p0, p1 := memberOf("ns", "p0", "g"), memberOf("ns", "p1", "g")
			podEvent(c, p0)
			podEvent(c, p1)
			pass(c, t0)
			wantAdmitted(t, c, verdict{true, ""}, p0, p1)
			if _, code, _ := c.PreFilter(p0, t0); code != admission.PreFilterOK {
				t.Fatalf("PreFilter = %v", code)
			}
			c.Unschedulable(logger, p0, t0, gang.Backoff{Base: time.Hour, Max: time.Hour}, "0/1 nodes are available")

			fresh := mkPG("ns", "g", 2)
			fresh.UID = "pg-ns-g-again"
			fresh.CreationTimestamp.Time = t0.Add(time.Minute)
			if relist {
				c.onPodGroupUpdate(logger, old, fresh)
			} else {
				delPG(c, old)
				addPG(c, fresh)
			}
			c.mu.RLock()
			g := c.groups[key("ns", "g")]
			first, backoff, reason := g.FirstAttempt, g.Backoff, g.Unschedulable
			c.mu.RUnlock()
			if !first.IsZero() || backoff.Active(t0) || reason != "" {
				t.Errorf("recreated group kept first attempt %v, backoff %+v, reason %q", first, backoff, reason)
			}
			if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || u.Admitted {
				t.Errorf("recreated gang's unit: %+v, want it pending", u)
			}
		})
	}
}

// The admitted-at annotation admits only the object it was written on: one
// copied with the YAML of an older object (written before this one was
// created) does not.
func TestStaleAdmittedAnnotationDoesNotAdmit(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	pg := mkPG("ns", "g", 1, admittedAt)
	pg.CreationTimestamp.Time = t0 // admittedAt writes t0 - 1m
	addPG(c, pg)
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || u.Admitted {
		t.Errorf("unit: %+v, want it pending", u)
	}
	ok := mkPG("ns", "h", 1, admittedAt)
	addPG(c, ok)
	if u := unitOf(c, queue.GroupUnit("ns", "h")); u == nil || !u.Admitted {
		t.Errorf("unit of a PodGroup admitted after its creation: %+v, want it admitted", u)
	}
}

// At start-up the PodGroups are listed before the scheduler's pod informer
// delivers the members, so a gang admitted by the previous process is
// installed with no members. Its request must follow them when they come,
// or it reserves nothing and a second gang is admitted into its room.
func TestAdmittedGangBeforeItsMembersReservesItsMinimum(t *testing.T) {
	c, h := newTestCache(t)
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "done", 2, admittedAt, pgQueue("q")))
	addPG(c, mkPG("ns", "next", 2, pgQueue("q")))
	enableAdmission(c, singletons, qfake.NewSimpleClientset())
	c.SetQueue(mkQueue("q", capability("3")), false)

	// Now the members: the admitted gang's two, the other gang's two.
	d := []*v1.Pod{memberOf("ns", "d0", "done"), memberOf("ns", "d1", "done")}
	n := []*v1.Pod{memberOf("ns", "n0", "next"), memberOf("ns", "n1", "next")}
	for _, p := range append(slices.Clone(d), n...) {
		podEvent(c, p)
	}
	wantUsage(t, c, "q", 0, 2)
	h.activations()
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, n...)
	wantConsistent(t, c, "after the pass")
}

// Lowering minMember to what is placed already lets the members waiting in
// Permit through at once, instead of after their timeout and a backoff.
func TestLoweredMinMemberAllowsWaitingMembers(t *testing.T) {
	c, h, pods := gangOf(t, 3, 3)
	a0, r0 := cycle(c, h, pods[0], "n1", t0)
	a1, r1 := cycle(c, h, pods[1], "n1", t0)
	if r0.Allow || r1.Allow {
		t.Fatalf("Permit allowed 2/3: %+v %+v", r0, r1)
	}
	addPG(c, mkPG("ns", "g", 2))
	for _, a := range []*v1.Pod{a0, a1} {
		allowed, rejected := h.waiting[a.UID].calls()
		if !slices.Equal(allowed, []string{"CalderaGang"}) || len(rejected) > 0 {
			t.Errorf("%s: Allow %q, Reject %q; want one Allow by CalderaGang", a.Name, allowed, rejected)
		}
	}
	wantCounts(t, c, key("ns", "g"), &gang.Counts{Members: 3, Active: 3, Pending: 1, Placed: 2})
	// Raising it again allows nothing more.
	addPG(c, mkPG("ns", "g", 3))
	if allowed, _ := h.waiting[a0.UID].calls(); len(allowed) != 1 {
		t.Errorf("Allow calls after raising minMember: %q", allowed)
	}
}

// Members that cannot reach this scheduler's Permit (another schedulerName,
// scheduling gates) do not count towards minMember before they are bound;
// bound members of any scheduler do.
func TestUnreachableMembersDoNotCount(t *testing.T) {
	c, h := newTestCache(t)
	trackReservations(c, "caldera")
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 3))
	mine := func(p *v1.Pod) { p.Spec.SchedulerName = "caldera" }
	other := func(p *v1.Pod) { p.Spec.SchedulerName = "default-scheduler" }
	gated := func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}} }
	p0, p1 := mkPod("ns", "p0", "g", mine), mkPod("ns", "p1", "g", mine)
	foreign, held := mkPod("ns", "foreign", "g", other), mkPod("ns", "held", "g", mine, gated)
	for _, p := range []*v1.Pod{p0, p1, foreign, held} {
		add(c, p)
	}
	_, ok, msg := c.Enqueueable(p0)
	if want := "waiting for members: 2/3 (2 more exist but are gated or name another scheduler)"; ok || msg != want {
		t.Errorf("Enqueueable = %v %q, want false %q", ok, msg, want)
	}
	if got := c.groups[key("ns", "g")].Counts.Unreachable; got != 2 {
		t.Errorf("Unreachable = %d, want 2", got)
	}
	// The other scheduler binds its pod: bound members count.
	update(c, foreign, next(foreign, boundTo("n1")))
	if _, ok, msg := c.Enqueueable(p0); !ok {
		t.Errorf("Enqueueable with a bound foreign member = false %q, want true", msg)
	}
	if got := activatedPods(h); !slices.Equal(got, []string{"ns/held", "ns/p0", "ns/p1"}) {
		t.Errorf("activated %v", got)
	}
	// The gated pod's minimum is not part of the gang's request; ungated it is.
	req, _ := c.MinRequest(key("ns", "g"))
	if req[resources.CPU] != 3000 {
		t.Errorf("MinRequest cpu = %d, want 3000 (two of ours and the bound one)", req[resources.CPU])
	}
	update(c, held, next(held, func(p *v1.Pod) { p.Spec.SchedulingGates = nil }))
	if got := c.groups[key("ns", "g")].Counts.Unreachable; got != 0 {
		t.Errorf("Unreachable after ungating = %d, want 0", got)
	}
}

// Queue names come from labels any tenant writes; the cache keeps per-queue
// state only for Queues that exist (and the default), whatever names pods
// use, and moves what asked for a name when its Queue is created.
func TestUnknownQueueNamesShareOneBucket(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n1", "1000"))
	var pods []*v1.Pod
	for i := range 50 {
		p := single("ns", fmt.Sprint("p", i), inQueue(fmt.Sprint("tenant-", i)))
		podEvent(c, p)
		pods = append(pods, p)
	}
	addPG(c, mkPG("ns", "g", 1, pgQueue("tenant-pg")))
	podEvent(c, memberOf("ns", "g0", "g"))
	pass(c, t0)
	c.mu.RLock()
	var queues []string
	for q := range c.adm.Usage {
		queues = append(queues, q)
	}
	pendingQueues := c.adm.Pending.Queues()
	c.mu.RUnlock()
	slices.Sort(queues)
	if !slices.Equal(queues, []string{admission.MissingQueue}) && !slices.Equal(queues, []string{admission.MissingQueue, "default"}) {
		t.Errorf("per-queue usage kept for %v, want only %q (and default)", queues, admission.MissingQueue)
	}
	if len(pendingQueues) > 2 {
		t.Errorf("pending heaps for %d queues, want at most 2", len(pendingQueues))
	}
	wantAdmitted(t, c, verdict{false, "queue tenant-7 not found"}, pods[7])

	// Bound while its queue does not exist (another scheduler, a restart).
	podEvent(c, next(pods[3], boundTo("n1")))
	wantUsage(t, c, admission.MissingQueue, 1, 0)
	c.SetQueue(mkQueue("tenant-3"), false)
	wantUsage(t, c, "tenant-3", 1, 0)
	wantUsage(t, c, admission.MissingQueue, 0, 0)
	c.SetQueue(mkQueue("tenant-pg"), false)
	pass(c, t0.Add(time.Second))
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || u.Queue != "tenant-pg" || !u.Admitted {
		t.Errorf("gang after its Queue was created: %+v", u)
	}
	c.SetQueue(mkQueue("tenant-3"), true)
	wantUsage(t, c, admission.MissingQueue, 1, 0)
	wantConsistent(t, c, "after queues came and went")
	if msg := admitted(c, pods[9]).msg; !strings.Contains(msg, "tenant-9") {
		t.Errorf("message %q does not name the queue asked for", msg)
	}
}

// An admitted gang that has not started and lost members below minMember
// cannot start; its admission kept its queue's room from work that could,
// for good when no controller replaces the pods (the randomized harness,
// seed 31: a gang admitted once its gated member was ungated, then a
// member deleted, held 36 of its queue's 54 cpu). It goes back to pending
// once it has been short for ShortGrace; a member replaced within the
// grace (a controller's replacement, a relist) keeps the admission.
func TestShortGangReturnsToPending(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 2, pgQueue("q")))
	g := []*v1.Pod{memberOf("ns", "g0", "g", cpu("2")), memberOf("ns", "g1", "g", cpu("2"))}
	for _, p := range g {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, g...)

	// Replaced within the grace: still admitted.
	podDelete(c, g[1])
	pass(c, t0.Add(time.Second))
	again := memberOf("ns", "g1", "g", cpu("2"), withUID("uid-ns-g1-again"))
	podEvent(c, again)
	pass(c, t0.Add(time.Second+admission.ShortGrace))
	wantAdmitted(t, c, verdict{true, ""}, g[0], again)

	// Short for longer than the grace: back to pending, its room free.
	podDelete(c, again)
	pass(c, t0.Add(10*time.Second))
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || !u.Admitted {
		t.Fatalf("unit %+v: returned before its grace", u)
	}
	pass(c, t0.Add(10*time.Second+admission.ShortGrace))
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || u.Admitted {
		t.Errorf("unit %+v: still admitted after %v short of members", u, admission.ShortGrace)
	}
	wantUsage(t, c, "q", 0, 0)
	wantConsistent(t, c, "after the short gang went back")
}

// A gang that started, had its minMember raised past the members it has,
// and then lost every bound member (evicted for a preemptor of its queue)
// goes back to pending, where it waits for members it is short of. Kept
// admitted, it held its queue's share for good, and the preemptor it was evicted for was
// refused by that share (random harness seed 9566: a gang of 35 cpu held
// 35 of its queue's 72 with nothing bound).
func TestStartedGangShortOfMembersReturns(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "64"))
	addPG(c, mkPG("ns", "g", 1, admittedAt, pgQueue("q")))
	var bound []*v1.Pod
	for i := range 7 {
		opts := []podOpt{cpu("5")}
		if i < 3 {
			opts = append(opts, boundTo("n1"), phase(v1.PodRunning))
		}
		p := memberOf("ns", fmt.Sprint("g", i), "g", opts...)
		if i < 3 {
			bound = append(bound, p)
		}
		podEvent(c, p)
	}
	pass(c, t0)
	addPG(c, mkPG("ns", "g", 7, admittedAt, pgQueue("q")))
	pass(c, t0.Add(time.Second))
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || !u.Admitted || !u.Started {
		t.Fatalf("premise: unit %+v, want admitted and started", u)
	}
	for _, p := range bound {
		podDelete(c, p)
	}
	c.GroupStatusWork(time.Now().Add(finishSettle)) // they did not finish
	pass(c, t0.Add(2*time.Second))
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || u.Admitted {
		t.Errorf("unit %+v: still admitted after it lost its bound members, 4 of 7", u)
	}
	wantUsage(t, c, "q", 0, 0)
	wantConsistent(t, c, "after the short gang went back")
}

// An admitted gang that has not started and whose minMember is raised
// reserves the larger minimum, which admission never checked: the
// randomized harness (seed 515) saw a gang admitted at minMember 1 raised to
// 7 members its nodes could never hold, reserving its queue's room while a
// singleton that fitted waited. Raised before it starts, the gang goes back
// to pending and admission decides again; lowered, it keeps its admission.
func TestRaisedMinMemberIsAdmittedAgain(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 1, pgQueue("q")))
	g := []*v1.Pod{
		memberOf("ns", "g0", "g", cpu("2")), memberOf("ns", "g1", "g", cpu("2")),
		memberOf("ns", "g2", "g", cpu("2")), memberOf("ns", "g3", "g", cpu("2")),
	}
	for _, p := range g {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, g...)

	// Lowered or unchanged: the admission stands.
	addPG(c, mkPG("ns", "g", 1, pgQueue("q")))
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{true, ""}, g...)

	// Raised to 4 members of 2 cpu: 8 cpu, past the queue's capability 4.
	addPG(c, mkPG("ns", "g", 4, pgQueue("q")))
	s := single("ns", "s", cpu("1"), inQueue("q"))
	podEvent(c, s)
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 8 exceeds capability 4"}, g...)
	wantAdmitted(t, c, verdict{true, ""}, s)
	wantConsistent(t, c, "after the raised gang went back")
}

// The same for minResources raised past what was admitted.
func TestRaisedMinResourcesIsAdmittedAgain(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 1, pgQueue("q"), minResources(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")})))
	g0 := memberOf("ns", "g0", "g", cpu("1"))
	podEvent(c, g0)
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, g0)
	addPG(c, mkPG("ns", "g", 1, pgQueue("q"), minResources(v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")})))
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 8 exceeds capability 4"}, g0)
	wantConsistent(t, c, "after the raised gang went back")
}
