package cache

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gang"
)

const defaultPermitTimeout = 30 * time.Second

var testBackoff = gang.Backoff{Base: time.Hour, Max: 8 * time.Hour}

// cycle runs what the scheduler runs for pod between Reserve and the wait in
// Permit, with the scheduler's assumed copy of the pod (spec.nodeName set to the
// chosen node), and parks the pod when Permit says wait.
func cycle(c *Cache, h *fakeHandle, pod *v1.Pod, node string, at time.Time) (*v1.Pod, PermitResult) {
	assumed := next(pod, boundTo(node))
	c.Reserve(assumed)
	r := c.Permit(logger, assumed, at, defaultPermitTimeout, "CalderaGang")
	if !r.Allow {
		h.park(assumed)
	}
	return assumed, r
}

// gangOf returns a cache holding PodGroup ns/g and its n pending members,
// on a node large enough for all of them.
func gangOf(tb testing.TB, n int, minMember int32, opts ...pgOpt) (*Cache, *fakeHandle, []*v1.Pod) {
	c, h := newTestCache(tb)
	c.ApplyNode(klog.Background(), mkNode("n1", "64"))
	addPG(c, mkPG("ns", "g", minMember, opts...))
	var pods []*v1.Pod
	for i := range n {
		p := mkPod("ns", fmt.Sprint("p", i), "g")
		add(c, p)
		pods = append(pods, p)
	}
	h.activations()
	return c, h, pods
}

func TestPermitWaitsForMinMemberThenAllowsSiblings(t *testing.T) {
	c, h, pods := gangOf(t, 4, 3)
	k := key("ns", "g")

	a0, r := cycle(c, h, pods[0], "n1", t0)
	if r.Allow || r.Timeout != defaultPermitTimeout || r.Message != "waiting for the gang: 1/3 members placed" {
		t.Fatalf("Permit(p0) = %+v, want wait %v for 1/3", r, defaultPermitTimeout)
	}
	a1, r := cycle(c, h, pods[1], "n1", t0.Add(time.Second))
	if r.Allow || r.Message != "waiting for the gang: 2/3 members placed" {
		t.Fatalf("Permit(p1) = %+v, want wait for 2/3", r)
	}
	wantCounts(t, c, k, &gang.Counts{Members: 4, Active: 4, Pending: 2, Placed: 2, Waiting: 2})
	for _, wp := range []*fakeWaitingPod{h.waiting[a0.UID], h.waiting[a1.UID]} {
		if allowed, rejected := wp.calls(); len(allowed)+len(rejected) > 0 {
			t.Fatalf("%s got Allow %q / Reject %q before the gang was complete", wp.pod.Name, allowed, rejected)
		}
	}

	if _, r = cycle(c, h, pods[2], "n1", t0.Add(2*time.Second)); !r.Allow {
		t.Fatalf("Permit(p2) = %+v, want allow: 3/3 placed", r)
	}
	for _, a := range []*v1.Pod{a0, a1} {
		allowed, rejected := h.waiting[a.UID].calls()
		if !slices.Equal(allowed, []string{"CalderaGang"}) || len(rejected) > 0 {
			t.Errorf("%s: Allow %q, Reject %q; want exactly one Allow by CalderaGang", a.Name, allowed, rejected)
		}
	}
	// Nothing is bound yet: the assumed pods' nodeName is a reservation.
	wantCounts(t, c, k, &gang.Counts{Members: 4, Active: 4, Pending: 1, Placed: 3})

	// A member beyond minMember goes straight through.
	if _, r = cycle(c, h, pods[3], "n1", t0.Add(3*time.Second)); !r.Allow {
		t.Errorf("Permit(p3) = %+v, want allow", r)
	}
	// The bindings arrive: reservations become bindings, nothing is counted twice.
	for _, p := range pods {
		update(c, p, next(p, boundTo("n1")))
	}
	wantCounts(t, c, k, &gang.Counts{Members: 4, Active: 4, Placed: 4, Bound: 4})
}

func TestPermit(t *testing.T) {
	t.Run("not a member", func(t *testing.T) {
		c, _ := newTestCache(t)
		if r := c.Permit(logger, mkPod("ns", "solo", ""), t0, defaultPermitTimeout, "CalderaGang"); !r.Allow {
			t.Errorf("Permit = %+v, want allow", r)
		}
	})
	t.Run("PodGroup gone", func(t *testing.T) {
		c, h, pods := gangOf(t, 2, 2)
		delPG(c, mkPG("ns", "g", 2))
		_, r := cycle(c, h, pods[0], "n1", t0)
		if want := (PermitResult{Timeout: time.Second, Message: "PodGroup ns/g not found"}); r != want {
			t.Errorf("Permit = %+v, want %+v", r, want)
		}
	})
	t.Run("scheduleTimeoutSeconds", func(t *testing.T) {
		c, h, pods := gangOf(t, 2, 2, scheduleTimeout(7))
		if _, r := cycle(c, h, pods[0], "n1", t0); r.Allow || r.Timeout != 7*time.Second {
			t.Errorf("Permit = %+v, want a 7s wait", r)
		}
	})
	t.Run("members already bound count", func(t *testing.T) {
		c, h, pods := gangOf(t, 3, 3)
		update(c, pods[0], next(pods[0], boundTo("n1"), phase(v1.PodRunning)))
		update(c, pods[1], next(pods[1], boundTo("n1")))
		if _, r := cycle(c, h, pods[2], "n1", t0); !r.Allow {
			t.Errorf("Permit = %+v, want allow: two members bound and one reserved", r)
		}
	})
	t.Run("finished members do not count", func(t *testing.T) {
		c, h, pods := gangOf(t, 3, 2)
		update(c, pods[0], next(pods[0], boundTo("n1"), phase(v1.PodSucceeded)))
		if _, r := cycle(c, h, pods[1], "n1", t0); r.Allow {
			t.Errorf("Permit = %+v, want wait: a succeeded member holds no node", r)
		}
	})
}

func TestReserveBeforeOurInformer(t *testing.T) {
	// The scheduler's informer can deliver a member before the cache's does:
	// Reserve and Permit then record it from the scheduler's copy.
	k := key("ns", "g")
	late := mkPod("ns", "late", "g")
	t.Run("unreserved before our informer saw it: no ghost", func(t *testing.T) {
		c, h, _ := gangOf(t, 1, 2)
		assumed, r := cycle(c, h, late, "n1", t0)
		if r.Allow {
			t.Fatalf("Permit(late) = %+v, want wait for 1/2", r)
		}
		wantCounts(t, c, k, &gang.Counts{Members: 2, Active: 2, Pending: 1, Placed: 1, Waiting: 1})
		c.Unreserve(logger, assumed, t0.Add(defaultPermitTimeout), testBackoff, defaultPermitTimeout)
		wantCounts(t, c, k, &gang.Counts{Members: 1, Active: 1, Pending: 1})
	})
	t.Run("confirmed later by our informer", func(t *testing.T) {
		c, h, _ := gangOf(t, 1, 2)
		assumed, _ := cycle(c, h, late, "n1", t0)
		add(c, late) // our informer's copy: not bound yet
		wantCounts(t, c, k, &gang.Counts{Members: 2, Active: 2, Pending: 1, Placed: 1, Waiting: 1})
		// Unreserve keeps a confirmed member, no longer placed.
		c.Unreserve(logger, assumed, t0.Add(time.Second), testBackoff, defaultPermitTimeout)
		wantCounts(t, c, k, &gang.Counts{Members: 2, Active: 2, Pending: 2})
	})
}

func TestUnreserveReleasesGang(t *testing.T) {
	k := key("ns", "g")
	for _, tc := range []struct {
		name string
		// fail is what goes wrong at `at`, while p0 and p1 wait in Permit (since t0).
		fail       func(c *Cache, h *fakeHandle, pods []*v1.Pod, at time.Time)
		at         time.Time
		wantReason string
	}{{
		name: "a member fails after Reserve",
		fail: func(c *Cache, h *fakeHandle, pods []*v1.Pod, at time.Time) {
			assumed := next(pods[2], boundTo("n1"))
			c.Reserve(assumed)
			c.Unreserve(logger, assumed, at, testBackoff, defaultPermitTimeout)
		},
		at:         t0.Add(time.Second),
		wantReason: "1/3 members unschedulable: a member failed to bind",
	}, {
		name: "a member fits no node",
		fail: func(c *Cache, h *fakeHandle, pods []*v1.Pod, at time.Time) {
			c.Unschedulable(logger, pods[2], at, testBackoff, "0/1 nodes are available: 1 Insufficient cpu.")
		},
		at:         t0.Add(time.Second),
		wantReason: "1/3 members unschedulable: 0/1 nodes are available: 1 Insufficient cpu.",
	}, {
		name: "a waiting member times out",
		fail: func(c *Cache, h *fakeHandle, pods []*v1.Pod, at time.Time) {
			a0 := next(pods[0], boundTo("n1"))
			h.unpark(a0)
			c.Unreserve(logger, a0, at, testBackoff, defaultPermitTimeout)
		},
		at:         t0.Add(defaultPermitTimeout),
		wantReason: "2/3 members unschedulable: timed out after 30s waiting in Permit with 2/3 members placed",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, h, pods := gangOf(t, 3, 3)
			var parked []*fakeWaitingPod
			for _, p := range pods[:2] {
				a, _ := cycle(c, h, p, "n1", t0)
				parked = append(parked, h.waiting[a.UID])
			}
			tc.fail(c, h, pods, tc.at)

			// Every member still waiting is rejected, once, with the reason.
			var stillParked []*fakeWaitingPod
			for _, wp := range parked {
				allowed, rejected := wp.calls()
				if len(allowed) > 0 {
					t.Errorf("%s allowed %q", wp.pod.Name, allowed)
				}
				if _, isParked := h.waiting[wp.pod.UID]; !isParked {
					continue // it timed out itself
				}
				stillParked = append(stillParked, wp)
				if want := []string{"CalderaGang: " + tc.wantReason}; !slices.Equal(rejected, want) {
					t.Errorf("%s rejections = %q, want %q", wp.pod.Name, rejected, want)
				}
			}
			if len(stillParked) == 0 {
				t.Fatal("no member left waiting: the case tests nothing")
			}
			// The rejected members' Unreserve follows, as the framework runs it.
			for i, wp := range stillParked {
				h.unpark(wp.pod)
				c.Unreserve(logger, wp.pod, tc.at.Add(time.Duration(i+1)*time.Millisecond), testBackoff, defaultPermitTimeout)
			}
			wantCounts(t, c, k, &gang.Counts{Members: 3, Active: 3, Pending: 3})
			for _, wp := range stillParked {
				if _, rejected := wp.calls(); len(rejected) != 1 {
					t.Errorf("%s rejected %d times: %q", wp.pod.Name, len(rejected), rejected)
				}
			}

			// One failure, one backoff: the siblings' Unreserve did not extend it.
			c.mu.Lock()
			g := c.groups[k]
			state, reason, timer := g.Backoff, g.Unschedulable, g.BackoffTimer != nil
			c.mu.Unlock()
			if want := (gang.BackoffState{Failures: 1, Until: tc.at.Add(time.Hour)}); state != want {
				t.Errorf("backoff = %+v, want %+v", state, want)
			}
			if !timer {
				t.Errorf("no timer re-activates the gang when the backoff ends")
			}
			if reason != tc.wantReason {
				t.Errorf("unschedulable reason = %q, want the failure's own %q", reason, tc.wantReason)
			}
			if _, code, _ := c.PreFilter(pods[0], tc.at.Add(time.Minute)); code != admission.PreFilterBackoff {
				t.Errorf("PreFilter during the backoff = %v, want PreFilterBackoff", code)
			}
			wantActivations(t, h)
			// When the backoff ends (the timer calls endBackoff), the members come back.
			c.endBackoff(logger, k)
			wantActivations(t, h, names(pods...))
		})
	}
}

func TestReleaseOfCompleteGangIsNoop(t *testing.T) {
	c, h, pods := gangOf(t, 3, 2)
	a0, _ := cycle(c, h, pods[0], "n1", t0)
	if _, r := cycle(c, h, pods[1], "n1", t0); !r.Allow {
		t.Fatalf("Permit = %+v, want allow", r)
	}
	// The third member, beyond minMember, finds no node: the placed gang stays.
	c.Unschedulable(logger, pods[2], t0, testBackoff, "no fit")
	if c.Release(logger, key("ns", "g"), t0, testBackoff, "no fit") {
		t.Errorf("Release of a gang with minMember placed = true, want false")
	}
	if _, rejected := h.waiting[a0.UID].calls(); len(rejected) > 0 {
		t.Errorf("placed member rejected: %q", rejected)
	}
	if _, code, _ := c.PreFilter(pods[2], t0.Add(time.Second)); code != admission.PreFilterOK {
		t.Errorf("PreFilter = %v, want OK: a complete gang does not back off", code)
	}
}

func TestPodGroupDeleteRejectsWaitingMembers(t *testing.T) {
	c, h, pods := gangOf(t, 3, 3)
	a0, _ := cycle(c, h, pods[0], "n1", t0)
	a1, _ := cycle(c, h, pods[1], "n1", t0)
	delPG(c, mkPG("ns", "g", 3))
	for _, a := range []*v1.Pod{a0, a1} {
		allowed, rejected := h.waiting[a.UID].calls()
		if want := []string{"CalderaGang: PodGroup ns/g was deleted"}; len(allowed) > 0 || !slices.Equal(rejected, want) {
			t.Errorf("%s: Allow %q, Reject %q; want Reject %q", a.Name, allowed, rejected, want)
		}
	}
	if _, ok, msg := c.Enqueueable(pods[2]); ok || msg != "waiting for PodGroup ns/g" {
		t.Errorf("Enqueueable = (%v, %q), want waiting for the PodGroup", ok, msg)
	}
	if _, code, _ := c.PreFilter(pods[2], t0); code != admission.PreFilterNoGroup {
		t.Errorf("PreFilter = %v, want PreFilterNoGroup", code)
	}
	// Deleting the PodGroup of a group without members forgets the group.
	c2, _ := newTestCache(t)
	addPG(c2, mkPG("ns", "g", 3))
	c2.onPodGroupDelete(logger, tombstone(mkPG("ns", "g", 3)))
	wantCounts(t, c2, key("ns", "g"), nil)
}

// ---------------------------------------------------------------------------
// QueueSort.

func TestSortInfo(t *testing.T) {
	early, late := t0.Add(-2*time.Hour), t0.Add(time.Hour)
	a1 := mkPod("ns", "a1", "a", priority(5), createdAt(late))
	a2 := mkPod("ns", "a2", "a", priority(100), createdAt(early))
	a3 := mkPod("ns", "a3", "a", createdAt(t0))
	solo := mkPod("ns", "solo", "", priority(7), createdAt(late))
	unknown := mkPod("ns", "u1", "unknown", priority(3), createdAt(early))

	c, _ := newTestCache(t)
	addAll(c, a1, a2, a3)
	want := SortInfo{Priority: 100, Created: early, Namespace: "ns", Name: "a"}
	for _, p := range []*v1.Pod{a1, a2, a3} {
		if got := c.SortInfo(p); got != want {
			t.Errorf("SortInfo(%s) without PodGroup = %+v, want %+v", p.Name, got, want)
		}
	}
	if got, want := c.SortInfo(solo), (SortInfo{Priority: 7, Created: late, Namespace: "ns", Name: "solo"}); got != want {
		t.Errorf("SortInfo(solo) = %+v, want %+v", got, want)
	}
	if got, want := c.SortInfo(unknown), (SortInfo{Priority: 3, Created: early, Namespace: "ns", Name: "unknown"}); got != want {
		t.Errorf("SortInfo(member of an unknown group) = %+v, want %+v", got, want)
	}

	// The PodGroup's creation time wins once it is known.
	pgTime := t0.Add(-10 * time.Hour)
	addPG(c, mkPG("ns", "a", 3, pgCreatedAt(pgTime)))
	want.Created = pgTime
	for _, p := range []*v1.Pod{a1, a2, a3} {
		if got := c.SortInfo(p); got != want {
			t.Errorf("SortInfo(%s) with PodGroup = %+v, want %+v", p.Name, got, want)
		}
	}
	// The highest-priority member leaves: the group's priority follows the rest.
	del(c, a2)
	want.Priority = 5
	for _, p := range []*v1.Pod{a1, a3} {
		if got := c.SortInfo(p); got != want {
			t.Errorf("SortInfo(%s) after delete = %+v, want %+v", p.Name, got, want)
		}
	}
	// Two members at the top: removing one keeps the priority.
	a4 := mkPod("ns", "a4", "a", priority(5))
	add(c, a4)
	del(c, a1)
	if got := c.SortInfo(a3); got != want {
		t.Errorf("SortInfo(a3) = %+v, want %+v", got, want)
	}
}

func TestSortInfoDoesNotAllocate(t *testing.T) {
	c, _ := newTestCache(t)
	m := mkPod("ns", "m", "g", priority(3))
	add(c, m)
	solo := mkPod("ns", "solo", "")
	if n := testing.AllocsPerRun(100, func() { c.SortInfo(m); c.SortInfo(solo) }); n != 0 {
		t.Errorf("SortInfo allocates %v times per call pair, want 0", n)
	}
}

// ---------------------------------------------------------------------------
// Status.

func TestSyncStatusEmitsOneEventPerState(t *testing.T) {
	c, h := newTestCache(t)
	p1 := mkPod("ns", "p1", "g")
	add(c, p1)
	syncStatus(c)
	if got, want := h.recorded(), []recordedEvent{{"Pod", "ns/p1", v1.EventTypeWarning, gang.ReasonWaiting, "waiting for PodGroup ns/g"}}; !slices.Equal(got, want) {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	// Same state: no new Event, even when more members arrive.
	add(c, mkPod("ns", "p2", "g"))
	syncStatus(c)
	if got := h.recorded(); len(got) != 0 {
		t.Errorf("events for an unchanged state: %+v", got)
	}
	if len(c.dirty) != 0 {
		t.Errorf("dirty after SyncStatus: %v", c.dirty)
	}
}

func TestSyncStatusWritesPodGroupStatus(t *testing.T) {
	c, h, pods := gangOf(t, 3, 2)
	pg := mkPG("ns", "g", 2)
	withPodGroups(c, pgfake.NewSimpleClientset(pg), nil)
	c.PreFilter(pods[0], t0.Add(1500*time.Millisecond))
	update(c, pods[0], next(pods[0], boundTo("n1"), phase(v1.PodRunning)))
	update(c, pods[1], next(pods[1], boundTo("n1"), phase(v1.PodRunning)))
	update(c, pods[2], next(pods[2], phase(v1.PodFailed)))
	h.recorded()

	syncStatus(c)
	got, err := podGroupClient(c).SchedulingV1alpha1().PodGroups("ns").Get(context.Background(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, Running: 2, Failed: 1, ScheduleStartTime: metav1.NewTime(t0.Add(time.Second))}
	if !got.Status.ScheduleStartTime.Equal(&want.ScheduleStartTime) || got.Status.Phase != want.Phase ||
		got.Status.Running != want.Running || got.Status.Succeeded != want.Succeeded || got.Status.Failed != want.Failed {
		t.Errorf("status = %+v, want %+v", got.Status, want)
	}
	wantEvents := []recordedEvent{{"PodGroup", "ns/g", v1.EventTypeNormal, gang.ReasonScheduled, "gang scheduled: minMember 2 bound"}}
	if got := h.recorded(); !slices.Equal(got, wantEvents) {
		t.Errorf("events = %+v, want %+v", got, wantEvents)
	}
}

// ---------------------------------------------------------------------------
// Concurrency.
