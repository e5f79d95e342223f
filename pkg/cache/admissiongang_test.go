package cache

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qfake "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned/fake"
	"github.com/caldera-sched/caldera/pkg/queue"
)

func TestAdmissionGangLifecycle(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	pods := []*v1.Pod{memberOf("ns", "m0", "g"), memberOf("ns", "m1", "g"), memberOf("ns", "m2", "g", cpu("2"))}
	podEvent(c, pods[0])
	podEvent(c, pods[1])
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "waiting for members: 2/3"}, pods[0])
	podEvent(c, pods[2])
	h.activations() // CalderaGang's activation: the gang has its members
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	if got, want := activatedPods(h), names(pods...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	wantUsage(t, c, "q", 0, 4)
	// Members bind one by one; inflight turns into allocated.
	steps := []struct {
		p                   *v1.Pod
		allocated, inflight int64
	}{
		{next(pods[0], boundTo("n1")), 1, 3},
		{next(pods[2], boundTo("n1")), 3, 1},
		{next(pods[1], boundTo("n1")), 4, 0},
		{next(pods[1], boundTo("n1"), phase(v1.PodRunning)), 4, 0},
	}
	for i, s := range steps {
		podEvent(c, s.p)
		wantUsage(t, c, "q", s.allocated, s.inflight)
		wantConsistent(t, c, fmt.Sprint("bind step ", i))
	}
	// The gang completes: it holds nothing and reserves nothing.
	for _, p := range pods {
		podEvent(c, next(p, boundTo("n1"), phase(v1.PodSucceeded)))
	}
	wantUsage(t, c, "q", 0, 0)
	wantConsistent(t, c, "after the gang finished")
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || !u.Admitted {
		t.Errorf("a finished gang's unit: %+v, want it still admitted", u)
	}
	// The PodGroup goes.
	delPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u != nil {
		t.Errorf("unit survives its PodGroup: %+v", u)
	}
	wantUsage(t, c, "q", 0, 0)
}

func TestAdmissionReleasedGangGoesBackToPending(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	addPG(c, mkPG("ns", "other", 2, pgQueue("q"), pgCreatedAt(t0)))
	pods := []*v1.Pod{memberOf("ns", "m0", "g"), memberOf("ns", "m1", "g"), memberOf("ns", "m2", "g")}
	others := []*v1.Pod{memberOf("ns", "o0", "other"), memberOf("ns", "o1", "other")}
	for _, p := range slices.Concat(pods, others) {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, others...)
	wantUsage(t, c, "q", 0, 3)
	if w := pendingWrites(c); len(w) != 1 || !w[0].Admitted || w[0].PodGroup == nil || *w[0].PodGroup != key("ns", "g").Named() {
		t.Errorf("writes after admission = %+v, want one admitted write for ns/g", w)
	}

	// One member is placed and waits for the others, which find no node: the
	// gang is released, so it must stop reserving its queue's room.
	c.Reserve(pods[0])
	h.park(pods[0])
	if r := c.Permit(logger, pods[0], t0, time.Minute, "CalderaGang"); r.Allow {
		t.Fatal("Permit allowed a gang short of its minimum")
	}
	if !c.Release(logger, key("ns", "g"), t0.Add(time.Second), testBackoff, "no fit") {
		t.Fatal("Release did nothing")
	}
	c.Unreserve(logger, pods[0], t0.Add(time.Second), testBackoff, time.Minute) // the rejection's echo
	h.unpark(pods[0])
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue q"}, pods...)
	wantUsage(t, c, "q", 0, 0)
	wantConsistent(t, c, "after the release")
	if w := pendingWrites(c); len(w) != 1 || !w[0].Unadmit || w[0].PodGroup == nil || *w[0].PodGroup != key("ns", "g").Named() {
		t.Errorf("writes after release = %+v, want one unadmit for ns/g", w)
	}

	// While it waits again, a higher-priority pod and the other gang take
	// the room it had.
	vip := single("ns", "vip", inQueue("q"), cpu("2"), priority(10))
	podEvent(c, vip)
	h.activations()
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, vip)
	wantAdmitted(t, c, verdict{true, ""}, others...)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 3 exceeds remaining capability 2"}, pods...)
	if got, want := activatedPods(h), names(slices.Concat(others, []*v1.Pod{vip})...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	wantUsage(t, c, "q", 0, 4)
	pendingWrites(c)

	// They finish and go: the released gang is admitted again, and its
	// Event and annotation (which the release removed) are written again.
	podDelete(c, vip)
	for _, p := range others {
		podDelete(c, p)
	}
	delPG(c, mkPG("ns", "other", 2))
	pass(c, t0.Add(3*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	if got, want := activatedPods(h), names(pods...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	wantUsage(t, c, "q", 0, 3)
	if w := pendingWrites(c); len(w) != 1 || !w[0].Admitted || w[0].PodGroup == nil || *w[0].PodGroup != key("ns", "g").Named() {
		t.Errorf("writes after re-admission = %+v, want one admitted write for ns/g (its annotation was removed)", w)
	}
	wantConsistent(t, c, "after re-admission")
	// A release while the gang backs off does nothing.
	if c.Release(logger, key("ns", "g"), t0.Add(4*time.Second), testBackoff, "no fit") {
		t.Error("a gang backing off was released again")
	}
	wantAdmitted(t, c, verdict{true, ""}, pods...)
}

func TestAdmissionAnnotatedGangAtStartup(t *testing.T) {
	c, h := newTestCache(t)
	c.ApplyNode(logger, mkNode("n1", "16"))
	// The cache's informers delivered these before admission was enabled.
	addPG(c, mkPG("ns", "done", 2, admittedAt, pgQueue("q")))
	addPG(c, mkPG("ns", "new", 2, pgQueue("q")))
	done := []*v1.Pod{memberOf("ns", "d0", "done"), memberOf("ns", "d1", "done", boundTo("n1"))}
	fresh := []*v1.Pod{memberOf("ns", "n0", "new"), memberOf("ns", "n1", "new")}
	addAll(c, append(slices.Clone(done), fresh...)...)
	h.activations()

	enableAdmission(c, singletons, qfake.NewSimpleClientset())
	// Known before the Queue is: the annotated gang is admitted without a
	// pass, the other waits.
	wantAdmitted(t, c, verdict{true, ""}, done...)
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue q"}, fresh...)
	// Until the Queue exists, its groups are charged to MissingQueue.
	wantUsage(t, c, admission.MissingQueue, 0, 2)
	// The scheduler's pod informer delivers the pods: the bound one holds.
	for _, p := range append(slices.Clone(done), fresh...) {
		c.onAnyPod(p, false)
	}
	wantUsage(t, c, admission.MissingQueue, 1, 1)
	wantConsistent(t, c, "after the pods")

	// Only room for one more cpu: the annotated gang's inflight counts.
	c.SetQueue(mkQueue("q", capability("3")), false)
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, fresh...)
	if got := activatedPods(h); len(got) != 0 {
		t.Errorf("activated %v", got)
	}
	// An annotation that shows up on a known gang is our own write's echo,
	// or stale: it does not admit. (The update resets the verdict until the
	// next pass.)
	addPG(c, mkPG("ns", "new", 2, pgQueue("q"), admittedAt))
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue q"}, fresh...)
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, fresh...)
	// A PodGroup that arrives annotated after its pods (recreated, say) is
	// admitted without a pass.
	late := memberOf("ns", "l0", "late")
	podEvent(c, late)
	addPG(c, mkPG("ns", "late", 1, pgQueue("q"), admittedAt))
	wantAdmitted(t, c, verdict{true, ""}, late)
	wantUsage(t, c, "q", 1, 2)
	wantConsistent(t, c, "at the end")
}

// ---------------------------------------------------------------------------
// Accounting under event sequences.

func TestAdmissionAccountingSequences(t *testing.T) {
	type step struct {
		name string
		do   func(c *Cache)
		// want: per queue cpu cores allocated and inflight after the step; nil
		// checks only the recount.
		want map[string][2]int64
	}
	s0 := single("ns", "s0", inQueue("a"))
	g0 := memberOf("ns", "g0", "g")
	g1 := memberOf("ns", "g1", "g", cpu("2"))
	pg := mkPG("ns", "g", 2, pgQueue("a"))
	cases := []struct {
		name  string
		steps []step
	}{{
		name: "singleton bound, re-labelled, finished",
		steps: []step{
			{"add", func(c *Cache) { podEvent(c, s0) }, map[string][2]int64{"a": {0, 0}}},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 1}}},
			{"bind", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"resync", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"queue label changes", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"), inQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {1, 0}}},
			{"running", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"), inQueue("b"), phase(v1.PodRunning))) }, map[string][2]int64{"b": {1, 0}}},
			{"succeeded", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"), inQueue("b"), phase(v1.PodSucceeded))) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
			{"deleted after", func(c *Cache) { podDelete(c, next(s0, boundTo("n1"), inQueue("b"), phase(v1.PodSucceeded))) }, map[string][2]int64{"b": {0, 0}}},
		},
	}, {
		name: "admitted singleton deleted before binding",
		steps: []step{
			{"add", func(c *Cache) { podEvent(c, s0) }, nil},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 1}}},
			{"queue label changes", func(c *Cache) { podEvent(c, next(s0, inQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {0, 1}}},
			{"delete", func(c *Cache) { podDelete(c, s0) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
			{"delete again", func(c *Cache) { podDelete(c, s0) }, map[string][2]int64{"b": {0, 0}}},
		},
	}, {
		name: "bound singleton seen at startup is admitted and holds",
		steps: []step{
			{"add bound", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"pass", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {1, 0}}},
			{"tombstone delete", func(c *Cache) { c.onAnyPod(tombstone(next(s0, boundTo("n1"))), true) }, map[string][2]int64{"a": {0, 0}}},
		},
	}, {
		name: "gang bound, member leaves through its label, finishes",
		steps: []step{
			{"PodGroup", func(c *Cache) { addPG(c, pg) }, nil},
			{"members", func(c *Cache) { podEvent(c, g0); podEvent(c, g1) }, map[string][2]int64{"a": {0, 0}}},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 3}}},
			{"bind g1", func(c *Cache) { podEvent(c, next(g1, boundTo("n1"))) }, map[string][2]int64{"a": {2, 1}}},
			{"PodGroup moves to b", func(c *Cache) { addPG(c, mkPG("ns", "g", 2, pgQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {2, 1}}},
			{"bind g0", func(c *Cache) { podEvent(c, next(g0, boundTo("n1"))) }, map[string][2]int64{"b": {3, 0}}},
			{"g1 loses the PodGroup label: a singleton of the default queue",
				func(c *Cache) { podEvent(c, next(g1, boundTo("n1"), label(""))) },
				map[string][2]int64{"b": {1, 0}, "default": {2, 0}}},
			{"g0 finishes: the gang has no member left", func(c *Cache) { podEvent(c, next(g0, boundTo("n1"), phase(v1.PodSucceeded))) },
				map[string][2]int64{"b": {0, 0}, "default": {2, 0}}},
			{"ex-member deleted", func(c *Cache) { podDelete(c, next(g1, boundTo("n1"), label(""))) }, map[string][2]int64{"default": {0, 0}}},
		},
	}, {
		name: "pods before their PodGroup",
		steps: []step{
			{"members bound first", func(c *Cache) {
				podEvent(c, next(g0, boundTo("n1"), inQueue("a")))
				podEvent(c, next(g1, boundTo("n1"), inQueue("a")))
			}, map[string][2]int64{"a": {3, 0}}},
			{"PodGroup in another queue", func(c *Cache) { addPG(c, mkPG("ns", "g", 2, pgQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {3, 0}}},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"b": {3, 0}}},
			{"g0 deleted: g1 is short of the minimum", func(c *Cache) { podDelete(c, next(g0, boundTo("n1"), inQueue("a"))) }, map[string][2]int64{"a": {0, 0}, "b": {2, 0}}},
			{"g1 deleted", func(c *Cache) { podDelete(c, next(g1, boundTo("n1"), inQueue("a"))) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
		},
	}, {
		name: "PodGroup deleted and recreated under running members",
		steps: []step{
			{"PodGroup", func(c *Cache) { addPG(c, pg) }, nil},
			{"members", func(c *Cache) { podEvent(c, g0); podEvent(c, g1) }, nil},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 3}}},
			{"bind", func(c *Cache) { podEvent(c, next(g0, boundTo("n1"))); podEvent(c, next(g1, boundTo("n1"))) }, map[string][2]int64{"a": {3, 0}}},
			{"PodGroup deleted", func(c *Cache) { delPG(c, pg) }, map[string][2]int64{"a": {3, 0}}},
			{"PodGroup recreated, annotated", func(c *Cache) { addPG(c, mkPG("ns", "g", 2, pgQueue("a"), admittedAt)) }, map[string][2]int64{"a": {3, 0}}},
			{"g1 deleted: g0 is short of the minimum", func(c *Cache) { podDelete(c, next(g1, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"g0 deleted", func(c *Cache) { podDelete(c, next(g0, boundTo("n1"))) }, map[string][2]int64{"a": {0, 0}}},
		},
	}, {
		name: "singleton joins a gang through its label",
		steps: []step{
			{"singleton", func(c *Cache) { podEvent(c, s0) }, nil},
			{"PodGroup", func(c *Cache) { addPG(c, mkPG("ns", "g", 1, pgQueue("a"))) }, nil},
			{"labelled into the gang", func(c *Cache) { podEvent(c, next(s0, label("g"))) }, nil},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 1}}},
			{"bind", func(c *Cache) { podEvent(c, next(s0, label("g"), boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"delete", func(c *Cache) { podDelete(c, next(s0, label("g"), boundTo("n1"))) }, map[string][2]int64{"a": {0, 0}}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"), mkQueue("a"), mkQueue("b"))
			c.ApplyNode(logger, mkNode("n1", "16"))
			for _, s := range tc.steps {
				s.do(c)
				wantConsistent(t, c, "after "+s.name)
				for q, w := range s.want {
					a, i := usageOf(c, q)
					if cpuOf(a) != w[0]*1000 || cpuOf(i) != w[1]*1000 {
						t.Errorf("after %s: queue %s cpu allocated %dm inflight %dm, want %d and %d cores", s.name, q, cpuOf(a), cpuOf(i), w[0], w[1])
					}
				}
			}
		})
	}
}

// A pod that left for a gang must not stay behind as a pending singleton.
func TestAdmissionSingletonLeavesForGang(t *testing.T) {
	c, _, qc := newAdmissionCache(t, singletons, mkQueue("a", capability("1")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	blocker := single("ns", "blocker", inQueue("a"))
	podEvent(c, blocker)
	pass(c, t0)
	s0 := single("ns", "s0", inQueue("a"))
	podEvent(c, s0)
	addPG(c, mkPG("ns", "g", 1, pgQueue("a")))
	podEvent(c, next(s0, label("g")))
	if u := unitOf(c, queue.PodUnit("ns", "s0")); u != nil {
		t.Errorf("the pod's singleton unit survives its joining a gang: %+v", u)
	}
	writer(c).SyncQueues(context.Background())
	st := queueStatus(t, qc, "a")
	if st.Pending != 1 || st.Admitted != 1 {
		t.Errorf("queue a counts pending %d admitted %d, want 1 and 1 (the gang; the blocker)", st.Pending, st.Admitted)
	}
}

// ---------------------------------------------------------------------------
// Events and the admitted-at annotation.
