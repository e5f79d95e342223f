package cache

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// fourNodes adds four 4-cpu nodes: 16 cpu in all, one 3-cpu member each.
func fourNodes(c *Cache) {
	for i := range 4 {
		c.ApplyNode(logger, mkNode(fmt.Sprint("n", i), "4"))
	}
}

// A gang whose total fits (5 x 3 of 16 cpu) but whose members do not (one
// per 4-cpu node) is not admitted, and says why; a plain 4-cpu pod that
// fits an empty node and a gang that fits are admitted past it.
func TestAdmissionUnplaceableGang(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	fourNodes(c)
	addPG(c, mkPG("ns", "big", 5, pgQueue("q")))
	var big []*v1.Pod
	for i := range 5 {
		p := memberOf("ns", fmt.Sprint("b", i), "big", cpu("3"))
		big = append(big, p)
		podEvent(c, p)
	}
	pod := single("ns", "plain", inQueue("q"), cpu("4"), createdAt(t0.Add(time.Second)))
	podEvent(c, pod)
	addPG(c, mkPG("ns", "small", 2, pgQueue("q"), pgCreatedAt(t0.Add(2*time.Second))))
	small := []*v1.Pod{memberOf("ns", "s0", "small", cpu("3")), memberOf("ns", "s1", "small", cpu("3"))}
	for _, p := range small {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "members not placeable: 4/5 fit on the free nodes"}, big...)
	wantAdmitted(t, c, verdict{true, ""}, pod)
	wantAdmitted(t, c, verdict{true, ""}, small...)
	wantConsistent(t, c, "after the pass")

	// The admitted pod and gang bind; the big gang waits, now for room.
	podEvent(c, next(pod, boundTo("n0")))
	podEvent(c, next(small[0], boundTo("n1")))
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 15 exceeds remaining capability 6"}, big...)
}

// Admitted groups not bound yet hold their room in the check: two 3-cpu
// singletons admitted onto 2 of the 4 nodes leave room for two more 3-cpu
// members, not four.
func TestAdmissionInflightPlacedFirst(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	fourNodes(c)
	a, b := single("ns", "a", inQueue("q"), cpu("3")), single("ns", "b", inQueue("q"), cpu("3"))
	podEvent(c, a)
	podEvent(c, b)
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, a, b)
	addPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	var g []*v1.Pod
	for i := range 3 {
		p := memberOf("ns", fmt.Sprint("g", i), "g", cpu("3"))
		g = append(g, p)
		podEvent(c, p)
	}
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{false, "members not placeable: 2/3 fit on the free nodes"}, g...)
	// a binds, b is deleted: room for the gang.
	podEvent(c, next(a, boundTo("n0")))
	podDelete(c, b)
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, g...)
}

// Eligibility: members with a node selector only use matching nodes, and
// NoSchedule taints keep pods without a toleration off a node.
func TestAdmissionPlacementEligibility(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	fourNodes(c)
	n3 := mkNode("n3", "4")
	n3.Spec.Taints = []v1.Taint{{Key: "gpu", Effect: v1.TaintEffectNoSchedule}}
	c.ApplyNode(logger, n3)
	n0 := mkNode("n0", "4")
	n0.Labels = map[string]string{"zone": "a"}
	c.ApplyNode(logger, n0)

	zoned := func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }
	tolerant := func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: "gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	}
	addPG(c, mkPG("ns", "z", 2, pgQueue("q")))
	z := []*v1.Pod{memberOf("ns", "z0", "z", cpu("3"), zoned), memberOf("ns", "z1", "z", cpu("3"), zoned)}
	addPG(c, mkPG("ns", "plain", 4, pgQueue("q"), pgCreatedAt(t0.Add(-time.Minute))))
	var plain []*v1.Pod
	for i := range 4 {
		plain = append(plain, memberOf("ns", fmt.Sprint("p", i), "plain", cpu("3")))
	}
	addPG(c, mkPG("ns", "tol", 4, pgQueue("q"), pgCreatedAt(t0.Add(-30*time.Minute))))
	var tol []*v1.Pod
	for i := range 4 {
		tol = append(tol, memberOf("ns", fmt.Sprint("t", i), "tol", cpu("1"), tolerant))
	}
	for _, p := range append(append(z, plain...), tol...) {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "members not placeable: 1/2 fit on the free nodes"}, z...)
	// tol's four 1-cpu members filled n0: four 3-cpu members find n1 and
	// n2, not the tainted n3.
	wantAdmitted(t, c, verdict{false, "members not placeable: 2/4 fit on the free nodes"}, plain...)
	// Tolerating the taint, four 1-cpu members fit.
	wantAdmitted(t, c, verdict{true, ""}, tol...)
}

// Past the starvation threshold, a gang that could be placed on empty nodes
// reserves them: a pod that would fit there is kept out until the gang is
// admitted, while a pod that fits elsewhere is admitted; the gang's own
// checks use its reserved nodes.
func TestAdmissionPlacementReservation(t *testing.T) {
	opts := singletons
	opts.StarvationThreshold = time.Minute
	// other weighs 3: of the 6 cpu the queues can have (the pods outside
	// take the rest), it deserves the 4 its two late pods ask for, so only
	// room refuses them.
	c, _, _ := newAdmissionCache(t, opts, mkQueue("q"), mkQueue("other", weight(3)))
	// Each 4-cpu node runs a 2-cpu pod outside Caldera: 6 cpu free in
	// all, 2 per node, so the 2 x 3-cpu gang fits in sum but nowhere.
	var running []*v1.Pod
	for i := range 3 {
		n := fmt.Sprint("n", i)
		c.ApplyNode(logger, mkNode(n, "4"))
		p := mkPod("ns", "r"+n, "", cpu("2"), boundTo(n))
		running = append(running, p)
		podEvent(c, p)
	}
	addPG(c, mkPG("ns", "g", 2, pgQueue("q")))
	g := []*v1.Pod{memberOf("ns", "g0", "g", cpu("3")), memberOf("ns", "g1", "g", cpu("3"))}
	for _, p := range g {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "members not placeable: 0/2 fit on the free nodes"}, g...)

	// Before the threshold a pod of another queue backfills.
	early := single("ns", "early", inQueue("other"), cpu("2"))
	podEvent(c, early)
	pass(c, t0.Add(30*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, early)
	podDelete(c, early)

	// Past it the gang holds n0 and n1 (from the pass that finds it
	// starving): a pod that fits n2 is admitted, one more is not (only the
	// reserved nodes have room).
	pass(c, t0.Add(90*time.Second))
	late := single("ns", "late", inQueue("other"), cpu("2"))
	late2 := single("ns", "late2", inQueue("other"), cpu("2"), createdAt(t0.Add(time.Second)))
	podEvent(c, late)
	podEvent(c, late2)
	pass(c, t0.Add(2*time.Minute))
	wantAdmitted(t, c, verdict{true, ""}, late)
	wantAdmitted(t, c, verdict{false, "members not placeable: 0/1 fit on the free nodes"}, late2)

	// The room drains: the gang is admitted on its reserved nodes and the
	// reservation ends; late2 follows when n2 has room.
	for _, p := range running {
		podDelete(c, p)
	}
	pass(c, t0.Add(3*time.Minute))
	wantAdmitted(t, c, verdict{true, ""}, g...)
	pass(c, t0.Add(4*time.Minute))
	wantAdmitted(t, c, verdict{true, ""}, late2)
	c.mu.RLock()
	left := len(c.feasible.Reservations)
	c.mu.RUnlock()
	if left != 0 {
		t.Errorf("%d reservations left after the gang was admitted", left)
	}
}

// The per-node room follows pod events: a bind takes room on its node, a
// delete gives it back, a node's deletion drops it.
func TestNodeRoomIncremental(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	fourNodes(c)
	p := single("ns", "p", inQueue("q"), cpu("3"))
	podEvent(c, p)
	podEvent(c, next(p, boundTo("n2")))
	room := func(n string) int64 {
		c.mu.RLock()
		defer c.mu.RUnlock()
		r := c.feasible.Rooms.Node(n)
		if r == nil {
			return -1
		}
		return cpuOf(r.Alloc) - cpuOf(r.Used)
	}
	if got := room("n2"); got != 1000 {
		t.Errorf("n2 free = %d, want 1000", got)
	}
	c.mu.RLock()
	q := cpuOf(c.feasible.Rooms.Node("n2").ByQueue["q"])
	c.mu.RUnlock()
	if q != 3000 {
		t.Errorf("n2 holds %d for queue q, want 3000", q)
	}
	podDelete(c, next(p, boundTo("n2")))
	if got := room("n2"); got != 4000 {
		t.Errorf("n2 free after the delete = %d, want 4000", got)
	}
	c.DeleteNode(mkNode("n2", "4"))
	if got := room("n2"); got != -1 {
		t.Errorf("n2 after its deletion = %d, want gone", got)
	}
}

// A pending gang's placement classes are kept between passes; a member
// replaced by a smaller one must be seen at the next pass.
func TestAdmissionPlacementFollowsMemberChanges(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n0", "4"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	c.ApplyNode(logger, mkNode("n2", "2"))
	addPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	g := []*v1.Pod{memberOf("ns", "g0", "g", cpu("3")), memberOf("ns", "g1", "g", cpu("3")), memberOf("ns", "g2", "g", cpu("3"))}
	for _, p := range g {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "members not placeable: 2/3 fit on the free nodes"}, g...)
	pass(c, t0.Add(time.Second)) // from the remembered classes
	wantAdmitted(t, c, verdict{false, "members not placeable: 2/3 fit on the free nodes"}, g...)
	podDelete(c, g[2])
	small := memberOf("ns", "g3", "g", cpu("2"))
	podEvent(c, small)
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, g[0], g[1], small)
}

// A preemptor's placement counts, on each node, what its queue's
// lower-priority pods hold there. A budget spread in node order landed on
// the node of the queue's higher-priority pod, and a 7-cpu preemptor that
// fits where the priority-0 pods run was never admitted (the randomized
// harness, seed 4).
func TestAdmissionPreemptorPlacedWhereLowerPrioritiesRun(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"), mkQueue("other"))
	enableEvictions(c, false, true)
	c.ApplyNode(logger, mkNode("n0", "8"))
	c.ApplyNode(logger, mkNode("n1", "8"))
	podEvent(c, single("ns", "high", inQueue("q"), cpu("4"), priority(1000), boundTo("n0")))
	podEvent(c, single("ns", "others", inQueue("other"), cpu("4"), boundTo("n0")))
	for i := range 4 {
		podEvent(c, single("ns", fmt.Sprint("low", i), inQueue("q"), cpu("2"), boundTo("n1")))
	}
	pre := single("ns", "pre", inQueue("q"), cpu("7"), priority(1000))
	podEvent(c, pre)
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, pre)
}

// A reclaimer's placement counts, on each node, what a victim queue above
// its deserved share holds there, up to the queue's excess. Spread in node
// order, the excess landed on the first node the victim uses, one the
// reclaimer's node selector excludes, and a pod that fits where the
// victim's other pods run was never admitted.
func TestAdmissionReclaimerPlacedWhereVictimsRun(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("victim"), mkQueue("q"))
	enableEvictions(c, true, false)
	c.ApplyNode(logger, mkNode("n0", "4"))
	n1 := mkNode("n1", "4")
	n1.Labels = map[string]string{"zone": "a"}
	c.ApplyNode(logger, n1)
	// The victim holds the whole cluster, 8 cpu; q demands 2 of it: by
	// water-filling the victim deserves 6, and 2 are reclaimable.
	for i, n := range []string{"n0", "n0", "n1", "n1"} {
		podEvent(c, single("ns", fmt.Sprint("v", i), inQueue("victim"), cpu("2"), boundTo(n)))
	}
	zoned := func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }
	r := single("ns", "r", inQueue("q"), cpu("2"), zoned)
	podEvent(c, r)
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, r)

	// The room counted on a node never exceeds the victim's excess: with
	// a third queue's demand the victim deserves 6 of the 10 cpu the
	// queues can have (16 less the 6 the pod outside holds), and only 2 of
	// the 8 it holds on n1 are reclaimable; n0 has 2 free.
	c2, _, _ := newAdmissionCache(t, singletons, mkQueue("victim"), mkQueue("q"), mkQueue("hog"))
	enableEvictions(c2, true, false)
	c2.ApplyNode(logger, mkNode("n0", "8"))
	c2.ApplyNode(logger, mkNode("n1", "8"))
	podEvent(c2, mkPod("ns", "outside", "", cpu("6"), boundTo("n0")))
	podEvent(c2, single("ns", "v0", inQueue("victim"), cpu("4"), boundTo("n1")))
	podEvent(c2, single("ns", "v1", inQueue("victim"), cpu("4"), boundTo("n1")))
	podEvent(c2, single("ns", "hog", inQueue("hog"), cpu("1")))
	big := single("ns", "big", inQueue("q"), cpu("3"))
	podEvent(c2, big)
	pass(c2, t0)
	wantAdmitted(t, c2, verdict{false, "members not placeable: 0/1 fit with the room reclaim and preemption can free"}, big)
}

// The same when the reclaimer may use every node but the first nodes the
// victim uses are too small for it: the victim's 6-cpu excess counted on
// the 4-cpu node left 2 on the 16-cpu node, and a 6-cpu pod that fits
// there once 6 of the victim's 12 cpu are reclaimed was never admitted.
func TestAdmissionReclaimerPlacedOnTheNodeItFits(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("victim"), mkQueue("q"))
	enableEvictions(c, true, false)
	c.ApplyNode(logger, mkNode("n0", "4"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	podEvent(c, single("ns", "v0", inQueue("victim"), cpu("4"), boundTo("n0")))
	for i := range 3 {
		podEvent(c, single("ns", fmt.Sprint("v", i+1), inQueue("victim"), cpu("4"), boundTo("n1")))
	}
	// 16 cpu, the victim demands 16 and q 6: the victim deserves 10.
	r := single("ns", "r", inQueue("q"), cpu("6"))
	podEvent(c, r)
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, r)
}

// Counted on every node it holds some, a victim's excess still bounds the
// pass's reclaim admissions in total: two 3-cpu reclaimers of 4 cpu of
// excess, on nodes where the victim holds 4 each (the 2 free cpu fit
// neither), are not both admitted.
func TestAdmissionReclaimersShareTheExcess(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("victim"), mkQueue("q"), mkQueue("q2"))
	enableEvictions(c, true, false)
	c.ApplyNode(logger, mkNode("n0", "4"))
	c.ApplyNode(logger, mkNode("n1", "4"))
	c.ApplyNode(logger, mkNode("n2", "2"))
	for i := range 8 {
		podEvent(c, single("ns", fmt.Sprint("v", i), inQueue("victim"), cpu("1"), boundTo(fmt.Sprint("n", i/4))))
	}
	// 10 cpu; q and q2 ask 3 each, the victim holds 8 and deserves 4.
	a := single("ns", "a", inQueue("q"), cpu("3"))
	b := single("ns", "b", inQueue("q2"), cpu("3"), createdAt(t0.Add(time.Second)))
	podEvent(c, a)
	podEvent(c, b)
	pass(c, t0)
	ok, _ := c.Admitted(a)
	ok2, _ := c.Admitted(b)
	if ok == ok2 {
		t.Errorf("admitted a: %v, b: %v; want exactly one of them", ok, ok2)
	}

	// The same within one gang: its two 3-cpu members cannot both draw on
	// the 4 cpu of excess.
	c2, _, _ := newAdmissionCache(t, singletons, mkQueue("victim"), mkQueue("q", weight(3)))
	enableEvictions(c2, true, false)
	c2.ApplyNode(logger, mkNode("n0", "4"))
	c2.ApplyNode(logger, mkNode("n1", "4"))
	c2.ApplyNode(logger, mkNode("n2", "2"))
	for i := range 8 {
		podEvent(c2, single("ns", fmt.Sprint("v", i), inQueue("victim"), cpu("1"), boundTo(fmt.Sprint("n", i/4))))
	}
	addPG(c2, mkPG("ns", "g", 2, pgQueue("q")))
	g := []*v1.Pod{memberOf("ns", "g0", "g", cpu("3")), memberOf("ns", "g1", "g", cpu("3"))}
	for _, p := range g {
		podEvent(c2, p)
	}
	pass(c2, t0)
	wantAdmitted(t, c2, verdict{false, "members not placeable: 1/2 fit with the room reclaim and preemption can free"}, g...)
}

// Fair share divides what the queues can have, not the whole allocatable:
// pods outside every queue (another scheduler's) hold room no queue can
// get. 100 cpu, 50 held outside; queue a runs 50 and wants 10 more, queue
// b submits a 20-cpu gang. Divided over 100, a deserved 60 and was never
// reclaimed from, and b waited for a's pods to end; over the 50 the queues
// can have, a deserves 30 and b 20, so b is admitted on reclaiming 20.
func TestAdmissionShareExcludesPodsOutsideQueues(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("a"), mkQueue("b"))
	enableEvictions(c, true, false)
	for i := range 10 {
		n := fmt.Sprint("n", i)
		c.ApplyNode(logger, mkNode(n, "10"))
		if i < 5 {
			podEvent(c, mkPod("ns", "other"+n, "", cpu("10"), boundTo(n)))
		} else {
			podEvent(c, single("ns", "a"+n, inQueue("a"), cpu("10"), boundTo(n)))
		}
	}
	more := single("ns", "a-more", inQueue("a"), cpu("10"))
	podEvent(c, more)
	addPG(c, mkPG("ns", "b", 2, pgQueue("b")))
	g := []*v1.Pod{memberOf("ns", "b0", "b", cpu("10")), memberOf("ns", "b1", "b", cpu("10"))}
	for _, p := range g {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, g...)
	if u := unitOf(c, admission.GangUnitKey(gangbook.GroupKey{Namespace: "ns", Name: "b"})); u == nil || !u.OnPlan {
		t.Errorf("gang b admitted, but not on a reclaim plan: %+v", u)
	}
	if got := admitted(c, more); got.ok {
		t.Errorf("a's extra pod admitted above a's share of the room queues can have")
	}
	d := c.snapshot(t0)
	if got := d.Cluster.Outside["cpu"]; got != 50000 {
		t.Errorf("dump: outside cpu %dm, want 50000m", got)
	}
	for _, q := range d.Queues {
		want := map[string]int64{"a": 30000, "b": 20000}[q.Name]
		if got := q.Deserved["cpu"]; want != 0 && got != want {
			t.Errorf("queue %s deserves %dm cpu, want %dm", q.Name, got, want)
		}
	}
	wantConsistent(t, c, "after the pass")
}
