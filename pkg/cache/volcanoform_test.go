package cache

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// quotaForm is minResources as Volcano's job controller (v1.10 and later)
// writes it for n pods of cpu and gpu each: a pod's quota usage summed.
func quotaForm(n int64, cpuQ string, gpu int64) v1.ResourceList {
	c := resource.MustParse(cpuQ)
	c.Mul(n)
	count := *resource.NewQuantity(n, resource.DecimalSI)
	out := v1.ResourceList{
		"count/pods": count, v1.ResourcePods: count,
		v1.ResourceCPU: c, "requests.cpu": c, "limits.cpu": c,
	}
	if gpu > 0 {
		g := *resource.NewQuantity(n*gpu, resource.DecimalSI)
		out["nvidia.com/gpu"], out["requests.nvidia.com/gpu"], out["limits.nvidia.com/gpu"] = g, g, g
	}
	return out
}

// A gang whose PodGroup Volcano's controller wrote, quota names and all, is
// admitted before its pods exist: the quota names are read as Volcano's
// scheduler reads them, not as resources no node has.
func TestVolcanoQuotaFormMinResources(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("8")))
	c.ApplyNode(logger, mkNode("n1", "4"))
	c.ApplyNode(logger, mkNode("n2", "4"))
	pg := mkVolcanoPG("ns", "job", 4, "q", "")
	min := quotaForm(4, "1", 0)
	pg.Spec.MinResources = &min
	withVolcano(t, c, pg)
	c.SetGroup(logger, volcano.Spec(pg))
	pass(c, t0)
	if u := unitOf(c, queue.GroupUnit("ns", "job")); u == nil || !u.Admitted {
		d, _ := c.adm.Pending.Decision(queue.GroupUnit("ns", "job"))
		t.Fatalf("gang with the controller's minResources: unit %+v, decision %+v, want admitted", u, d)
	}
	wantUsage(t, c, "q", 0, 4)
}

// Before its pods exist a Volcano gang is judged by sums, as Volcano's
// enqueue judges it: nothing tells how minResources splits into pods, nor
// that the workers tolerate the GPU nodes' taint.
func TestVolcanoPodlessGangJudgedBySums(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	for _, name := range []string{"gpu1", "gpu2"} {
		n := mkNode(name, "8")
		n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("4")
		n.Spec.Taints = []v1.Taint{{Key: "nvidia.com/gpu", Effect: v1.TaintEffectNoSchedule}}
		c.ApplyNode(logger, n)
	}
	// A master without GPUs beside two full-node workers: 3 members, 8
	// GPUs. Cut into even slices (3 GPUs each) they would not fit 2 nodes
	// of 4; by sums they do, and they will as the pods really are.
	pg := mkVolcanoPG("ns", "train", 3, "q", "")
	min := quotaForm(2, "2", 4)
	for k, v := range quotaForm(1, "1", 0) {
		if k != "nvidia.com/gpu" {
			q := min[k]
			q.Add(v)
			min[k] = q
		}
	}
	pg.Spec.MinResources = &min
	// A second one, beyond the cluster's 8 GPUs by sums once the first
	// is admitted, waits.
	more := mkVolcanoPG("ns", "more", 1, "q", "")
	more.CreationTimestamp.Time = t0.Add(time.Second)
	min2 := quotaForm(1, "1", 4)
	more.Spec.MinResources = &min2
	vcc := withVolcano(t, c, pg, more)
	c.SetGroup(logger, volcano.Spec(pg))
	c.SetGroup(logger, volcano.Spec(more))
	pass(c, t0)
	if u := unitOf(c, queue.GroupUnit("ns", "train")); u == nil || !u.Admitted {
		d, _ := c.adm.Pending.Decision(queue.GroupUnit("ns", "train"))
		t.Fatalf("pod-less gang on tainted GPU nodes: unit %+v, decision %+v, want admitted", u, d)
	}
	if u := unitOf(c, queue.GroupUnit("ns", "more")); u == nil || u.Admitted {
		t.Fatalf("second gang beyond the GPUs: unit %+v, want pending", u)
	}
	syncVolcanoStatus(t, c, vcc)
	if got := volcanoStatus(t, vcc, "train"); got.Phase != vc.PodGroupInqueue {
		t.Errorf("train: phase %q, want Inqueue", got.Phase)
	}
	if got := volcanoStatus(t, vcc, "more"); got.Phase != vc.PodGroupPending {
		t.Errorf("more: phase %q, want Pending", got.Phase)
	}
}

// Volcano's RestartJob deletes a job's pods and its PodGroup, and creates
// the PodGroup again under the same name while the old pods still
// terminate. The new PodGroup is a new gang: the terminating pods are not
// its members, so it is neither Running on them nor started; it is
// admitted again and waits for its new pods.
func TestVolcanoRecreatedPodGroupIgnoresTerminatingPods(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "8"))
	old := mkVolcanoPG("ns", "job", 2, "q", "2")
	renewed := mkVolcanoPG("ns", "job", 2, "q", "2")
	renewed.UID = "vpg-ns-job-2"
	renewed.CreationTimestamp.Time = t0.Add(time.Minute)
	vcc := withVolcano(t, c, old)
	c.SetGroup(logger, volcano.Spec(old))
	pass(c, t0)
	pods := []*v1.Pod{volcanoMember("ns", "p0", "job", cpu("1")), volcanoMember("ns", "p1", "job", cpu("1"))}
	for i, p := range pods {
		pods[i] = next(p, boundTo("n1"), phase(v1.PodRunning))
		podEvent(c, pods[i])
	}
	if u := unitOf(c, queue.GroupUnit("ns", "job")); u == nil || !u.Started {
		t.Fatalf("first PodGroup, both members running: unit %+v, want started", u)
	}

	// The restart: pods deleted (terminating), PodGroup deleted, made again.
	for i, p := range pods {
		pods[i] = next(p, func(p *v1.Pod) { p.DeletionTimestamp = &renewed.CreationTimestamp })
		podEvent(c, pods[i])
	}
	c.DeleteGroup(logger, volcano.Spec(old))
	delete(vcc.pgs, types.NamespacedName{Namespace: "ns", Name: "job"})
	if err := vcc.pgStore.Delete(old); err != nil {
		t.Fatal(err)
	}
	vcc.pgs[types.NamespacedName{Namespace: "ns", Name: "job"}] = renewed.DeepCopy()
	vcc.refresh(t)
	c.SetGroup(logger, volcano.Spec(renewed))
	pass(c, t0.Add(time.Minute))

	u := unitOf(c, queue.GroupUnit("ns", "job"))
	if u == nil || !u.Admitted || u.Started {
		t.Fatalf("recreated PodGroup: unit %+v, want admitted again and not started", u)
	}
	syncVolcanoStatus(t, c, vcc)
	if got := volcanoStatus(t, vcc, "job"); got.Phase != vc.PodGroupInqueue || got.Running != 0 {
		t.Errorf("recreated PodGroup: %s with %d running, want Inqueue with none: its old pods are terminating", got.Phase, got.Running)
	}
	// A terminating pod's late update does not bring it back.
	podEvent(c, next(pods[0], phase(v1.PodRunning)))
	if g := c.groups[key("ns", "job")]; g == nil || len(g.Members) != 0 {
		t.Errorf("recreated PodGroup: members %v, want none", g.Members)
	}
}

// minTaskMember holds the barrier until each task has its minimum: four
// workers placed without their master wait, and the master opens it for
// all (Volcano's gang plugin forbids the job to start without it).
func TestVolcanoTaskMinimumsHoldTheBarrier(t *testing.T) {
	c, h := newTestCache(t)
	c.ApplyNode(logger, mkNode("n1", "16"))
	pg := mkVolcanoPG("ns", "job", 4, "", "")
	pg.Spec.MinTaskMember = map[string]int32{"master": 1, "worker": 3}
	c.SetGroup(logger, volcano.Spec(pg))
	task := func(name, role string) *v1.Pod {
		p := volcanoMember("ns", name, "job")
		p.Annotations[volcano.TaskSpecKey] = role
		return p
	}
	workers := []*v1.Pod{task("w0", "worker"), task("w1", "worker"), task("w2", "worker"), task("w3", "worker")}
	master := task("m0", "master")
	addAll(c, append(slices.Clone(workers), master)...)
	assumed := func(p *v1.Pod) *v1.Pod { return next(p, boundTo("n1")) }
	var parked []*fakeWaitingPod
	for _, w := range workers {
		c.Reserve(assumed(w))
		parked = append(parked, h.park(w))
		r := c.Permit(logger, assumed(w), t0, time.Minute, gangPluginName)
		if r.Allow {
			t.Fatalf("Permit let %s through: four workers without their master", w.Name)
		}
		if w == workers[3] && r.Message != "waiting for the gang: task master has 0/1 members placed" {
			t.Errorf("Permit message = %q, want the short task named", r.Message)
		}
	}
	c.Reserve(assumed(master))
	if r := c.Permit(logger, assumed(master), t0, time.Minute, gangPluginName); !r.Allow {
		t.Fatalf("Permit held the master: %s", r.Message)
	}
	for i, wp := range parked {
		if allowed, rejected := wp.calls(); len(allowed) != 1 || len(rejected) != 0 {
			t.Errorf("%s: allowed by %v, rejected by %v; want allowed once", workers[i].Name, allowed, rejected)
		}
	}
}

// An admitted gang whose controller never delivers pods Caldera can place
// goes back to pending after OverdueGrace, its queue's room freed and its
// verdict saying why (here: its pods name a scheduler no profile serves);
// the small gang behind it is admitted into that room. The promise is
// given again OverdueGrace later.
func TestVolcanoGangWhosePodsNeverArriveReturnsToPending(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	trackReservations(c, testProfile) // the one profile that places gangs
	c.ApplyNode(logger, mkNode("n1", "16"))
	lost, small := mkVolcanoPG("ns", "lost", 2, "q", "4"), mkVolcanoPG("ns", "small", 1, "q", "2")
	small.CreationTimestamp = metav1.NewTime(t0.Add(time.Second))
	vcc := withVolcano(t, c, lost, small)
	c.SetGroup(logger, volcano.Spec(lost))
	c.SetGroup(logger, volcano.Spec(small))
	lostKey, smallKey := queue.GroupUnit("ns", "lost"), queue.GroupUnit("ns", "small")

	pass(c, t0)
	if u := unitOf(c, lostKey); u == nil || !u.Admitted {
		t.Fatalf("lost, no pods yet: unit %+v, want admitted on its promise", u)
	}
	// Its controller creates the pods, on a scheduler nobody serves here.
	for _, name := range []string{"l0", "l1"} {
		p := volcanoMember("ns", name, "lost", cpu("2"))
		p.Spec.SchedulerName = "volcano-old"
		podEvent(c, p)
	}
	pass(c, t0.Add(time.Second)) // starts the clock
	pass(c, t0.Add(time.Second+admission.OverdueGrace-time.Millisecond))
	if u := unitOf(c, lostKey); !u.Admitted {
		t.Fatalf("lost returned to pending before overdueGrace")
	}
	pass(c, t0.Add(time.Second+admission.OverdueGrace))
	if u := unitOf(c, lostKey); u.Admitted {
		t.Fatalf("lost still admitted %v after admission with no pod Caldera can place", admission.OverdueGrace)
	}
	if u := unitOf(c, smallKey); u == nil || !u.Admitted {
		t.Errorf("small: unit %+v, want admitted into the room lost held", u)
	}
	syncVolcanoStatus(t, c, vcc)
	got := volcanoStatus(t, vcc, "lost")
	if got.Phase != vc.PodGroupPending || !hasCondition(got, vc.PodGroupUnschedulableType, vc.NotEnoughResourcesReason, `scheduler "volcano-old", which no profile of this scheduler serves`) {
		t.Errorf("lost: %+v, want Pending saying its pods name an unserved scheduler", got)
	}
	// The promise is given again later: with room, it is admitted again.
	c.DeleteGroup(logger, volcano.Spec(small))
	pass(c, t0.Add(time.Second+2*admission.OverdueGrace))
	if u := unitOf(c, lostKey); !u.Admitted {
		t.Errorf("lost: not admitted again once its promise was given back")
	}
}

// A Volcano Queue that closes holds placement: the members its admitted
// gang has not placed wait (Volcano allocates only in Open queues), the
// placed one keeps its node; when it opens again they are activated and
// may go. A Caldera Queue that closes stops admission only
// (TestAdmissionClosedQueue).
func TestClosingVolcanoQueueHoldsPlacement(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons)
	c.ApplyNode(logger, mkNode("n1", "16"))
	vq := &vc.Queue{ObjectMeta: metav1.ObjectMeta{Name: "vq", UID: "vq-uid"}, Spec: vc.QueueSpec{Weight: 1}}
	vcc := withVolcano(t, c, vq)
	vcc.reader.OnQueue(vq, false)
	c.SetGroup(logger, volcano.Spec(mkVolcanoPG("ns", "job", 2, "vq", "")))
	placed, waiting := volcanoMember("ns", "m0", "job", boundTo("n1")), volcanoMember("ns", "m1", "job")
	podEvent(c, placed)
	podEvent(c, waiting)
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, placed, waiting)

	closing := vq.DeepCopy()
	closing.Status.State = vc.QueueStateClosing
	vcc.reader.OnQueue(closing, false)
	if ok, msg := c.Admitted(waiting); ok || !strings.Contains(msg, "queue vq is not Open") {
		t.Errorf("an unplaced member of a Closing queue: Admitted = %v, %q; want held", ok, msg)
	}
	if ok, _ := c.Admitted(placed); !ok {
		t.Errorf("a placed member of a Closing queue lost its admission")
	}
	pass(c, t0.Add(time.Second))
	if u := unitOf(c, queue.GroupUnit("ns", "job")); !u.Admitted {
		t.Errorf("the gang lost its admission: Volcano keeps it Inqueue")
	}

	h.activations()
	vcc.reader.OnQueue(vq, false) // Open again
	if ok, msg := c.Admitted(waiting); !ok {
		t.Errorf("after the queue opened: Admitted = false, %q", msg)
	}
	if got := activatedPods(h); !slices.Contains(got, "ns/m1") {
		t.Errorf("activated %v, want the held member", got)
	}
}

// With four workers reserved and waiting for their master, the master is
// part of the minimum, not an extra told to wait for the others to bind:
// they never would, and the gang would wait out its Permit timeout.
func TestVolcanoShortTaskIsNoExtra(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	pg := mkVolcanoPG("ns", "job", 4, "q", "")
	pg.Spec.MinTaskMember = map[string]int32{"master": 1, "worker": 3}
	c.SetGroup(logger, volcano.Spec(pg))
	task := func(name, role string) *v1.Pod {
		p := volcanoMember("ns", name, "job")
		p.Annotations[volcano.TaskSpecKey] = role
		return p
	}
	workers := []*v1.Pod{task("w0", "worker"), task("w1", "worker"), task("w2", "worker"), task("w3", "worker")}
	master := task("m0", "master")
	for _, p := range append(slices.Clone(workers), master) {
		podEvent(c, p)
	}
	pass(c, t0)
	for _, w := range workers {
		c.Reserve(next(w, boundTo("n1")))
		h.park(w)
		c.Permit(logger, next(w, boundTo("n1")), t0, time.Minute, gangPluginName)
	}
	wantPreFilter(t, c, master, t0, admission.PreFilterOK, "")
	// A fifth worker is an extra: its task has its minimum.
	more := task("w4", "worker")
	podEvent(c, more)
	wantPreFilter(t, c, more, t0, admission.PreFilterExtraEarly, "PodGroup ns/job has its 4 minimum members placed; members beyond them wait for those to bind")
}
