package cache

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gang"
)

// A running gang that loses members (their node went away) and cannot place
// their replacements at once is released, but keeps its admission: sent back
// to pending, its request would count its running members a second time on
// top of the cluster's used amount, and it would never be admitted again.
func TestReleasedStartedGangKeepsAdmission(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	m0, m1 := startGang(c)
	wantAdmitted(t, c, verdict{ok: true}, m0)

	podDelete(c, next(m1, boundTo("n1"), phase(v1.PodRunning)))
	m2 := memberOf("ns", "m2", "g", cpu("2"))
	podEvent(c, m2)
	c.Unschedulable(logger, m2, t0, gang.Backoff{}, "0/1 nodes are available: 1 Insufficient cpu.")
	pass(c, t0)
	wantAdmitted(t, c, verdict{ok: true}, m2)
	wantUsage(t, c, "q", 2, 0)
	wantConsistent(t, c, "after the release")
	if writes := pendingWrites(c); len(writes) > 1 {
		t.Errorf("a started gang's release queued writes %+v, want only its admission", writes)
	}
}

// A gang that had members bound before this cache admitted it (its
// scheduler was killed while binding it, before the admission reached the
// PodGroup) needs room only for its unbound members: the bound ones are
// counted as used already. Before, admission asked for the whole gang on
// top of them and the last member never bound.
func TestPartlyBoundGangIsAdmittedForWhatItLacks(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	addPG(c, mkPG("ns", "g", 4, pgQueue("q")))
	var pending *v1.Pod
	for i := range 4 {
		m := memberOf("ns", fmt.Sprint("m", i), "g", cpu("1"))
		if i < 3 {
			m = next(m, boundTo("n1"), phase(v1.PodRunning))
		} else {
			pending = m
		}
		podEvent(c, m)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{ok: true}, pending)
	wantUsage(t, c, "q", 3, 1)
	wantConsistent(t, c, "after admitting the partly bound gang")

	// Its last member binds: nothing is reserved any more.
	podEvent(c, next(pending, boundTo("n1"), phase(v1.PodRunning)))
	wantUsage(t, c, "q", 4, 0)
}

// A started gang whose every member is gone (all evicted: a higher-priority
// pod took their node) holds nothing, so nothing of it runs: it goes back to
// its queue, where its capability is checked anew. Before, it kept its
// admission for good: one replacement member at a time waited in Permit
// over the queue's capability, holding a node and the queue's room from
// pods that fit, and timed out, in a loop.
func TestStartedGangWithNothingBoundIsDecidedAgain(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "8"))
	m0, m1 := startGang(c)
	wantUsage(t, c, "q", 4, 0)

	podDelete(c, next(m0, boundTo("n1"), phase(v1.PodRunning)))
	podDelete(c, next(m1, boundTo("n1"), phase(v1.PodRunning)))
	m2, m3 := memberOf("ns", "m2", "g", cpu("2")), memberOf("ns", "m3", "g", cpu("2"))
	podEvent(c, m2)
	podEvent(c, m3)
	// The bound members may have finished until the finished-member
	// informer has had finishSettle to deliver them; the status writer's
	// next look after that finds them deleted.
	if got := admitted(c, m2); !got.ok {
		t.Errorf("Admitted(m2) = %+v while its bound members may be finishing, want admitted", got)
	}
	c.GroupStatusWork(time.Now().Add(finishSettle))
	if got := admitted(c, m2); got.ok {
		t.Errorf("Admitted(m2) = %+v: a gang with nothing bound kept its admission", got)
	}
	wantUsage(t, c, "q", 0, 0)

	// The preemptor binds in the queue; the gang no longer fits its
	// queue's capability and stays pending.
	podEvent(c, single("ns", "s", inQueue("q"), cpu("2"), boundTo("n1"), phase(v1.PodRunning)))
	pass(c, t0)
	if got := admitted(c, m2); got.ok {
		t.Errorf("Admitted(m2) = %+v: a gang with nothing bound was admitted over its queue's capability", got)
	}
	wantUsage(t, c, "q", 2, 0)
	wantConsistent(t, c, "after the gang went back")
}

// The bound members of a started gang finish: the scheduler's pod informer
// drops each at once, and the finished-member informer delivers it a moment
// later. In between the gang has nothing bound, yet it has not lost its
// members: it stays started and reserves nothing. Before, it was taken for
// a gang whose members were all evicted and reserved its minimum again for
// that moment; a pass then placed its leftover members ahead of another
// gang's reservation, which slid behind the work it let start.
func TestFinishingMembersKeepAGangStarted(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "8"))
	m0, m1 := startGang(c)
	podEvent(c, memberOf("ns", "m2", "g", cpu("2"))) // left over: never placed
	wantUsage(t, c, "q", 4, 0)

	for _, m := range []*v1.Pod{m0, m1} {
		podDelete(c, next(m, boundTo("n1"), phase(v1.PodRunning)))
	}
	wantUsage(t, c, "q", 0, 0) // finishing, not gone: nothing reserved

	for _, m := range []*v1.Pod{m0, m1} {
		add(c, next(m, boundTo("n1"), phase(v1.PodSucceeded)))
	}
	wantUsage(t, c, "q", 0, 0)
	wantConsistent(t, c, "after the members finished")
}

// startGang admits gang ns/g of queue q (minMember 2) and binds its two
// 2-cpu members to n1, running; it returns them as created.
func startGang(c *Cache) (m0, m1 *v1.Pod) {
	addPG(c, mkPG("ns", "g", 2, pgQueue("q")))
	m0, m1 = memberOf("ns", "m0", "g", cpu("2")), memberOf("ns", "m1", "g", cpu("2"))
	podEvent(c, m0)
	podEvent(c, m1)
	pass(c, t0)
	for _, m := range []*v1.Pod{m0, m1} {
		podEvent(c, next(m, boundTo("n1"), phase(v1.PodRunning)))
	}
	return m0, m1
}
