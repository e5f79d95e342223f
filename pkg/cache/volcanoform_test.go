package cache

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

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
	c.onNode(logger, mkNode("n1", "4"))
	c.onNode(logger, mkNode("n2", "4"))
	pg := mkVolcanoPG("ns", "job", 4, "q", "")
	min := quotaForm(4, "1", 0)
	pg.Spec.MinResources = &min
	withVolcano(t, c, pg)
	c.onGroup(logger, volcano.Spec(pg))
	pass(c, t0)
	if u := unitOf(c, queue.GroupUnit("ns", "job")); u == nil || !u.admitted {
		d, _ := c.adm.pending.Decision(queue.GroupUnit("ns", "job"))
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
		c.onNode(logger, n)
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
	c.onGroup(logger, volcano.Spec(pg))
	c.onGroup(logger, volcano.Spec(more))
	pass(c, t0)
	if u := unitOf(c, queue.GroupUnit("ns", "train")); u == nil || !u.admitted {
		d, _ := c.adm.pending.Decision(queue.GroupUnit("ns", "train"))
		t.Fatalf("pod-less gang on tainted GPU nodes: unit %+v, decision %+v, want admitted", u, d)
	}
	if u := unitOf(c, queue.GroupUnit("ns", "more")); u == nil || u.admitted {
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
	c.onNode(logger, mkNode("n1", "8"))
	old := mkVolcanoPG("ns", "job", 2, "q", "2")
	renewed := mkVolcanoPG("ns", "job", 2, "q", "2")
	renewed.UID = "vpg-ns-job-2"
	renewed.CreationTimestamp.Time = t0.Add(time.Minute)
	vcc := withVolcano(t, c, old)
	c.onGroup(logger, volcano.Spec(old))
	pass(c, t0)
	pods := []*v1.Pod{volcanoMember("ns", "p0", "job", cpu("1")), volcanoMember("ns", "p1", "job", cpu("1"))}
	for i, p := range pods {
		pods[i] = next(p, boundTo("n1"), phase(v1.PodRunning))
		podEvent(c, pods[i])
	}
	if u := unitOf(c, queue.GroupUnit("ns", "job")); u == nil || !u.started {
		t.Fatalf("first PodGroup, both members running: unit %+v, want started", u)
	}

	// The restart: pods deleted (terminating), PodGroup deleted, made again.
	for i, p := range pods {
		pods[i] = next(p, func(p *v1.Pod) { p.DeletionTimestamp = &renewed.CreationTimestamp })
		podEvent(c, pods[i])
	}
	c.onGroupDelete(logger, volcano.Spec(old))
	delete(vcc.pgs, types.NamespacedName{Namespace: "ns", Name: "job"})
	if err := vcc.pgStore.Delete(old); err != nil {
		t.Fatal(err)
	}
	vcc.pgs[types.NamespacedName{Namespace: "ns", Name: "job"}] = renewed.DeepCopy()
	vcc.refresh(t)
	c.onGroup(logger, volcano.Spec(renewed))
	pass(c, t0.Add(time.Minute))

	u := unitOf(c, queue.GroupUnit("ns", "job"))
	if u == nil || !u.admitted || u.started {
		t.Fatalf("recreated PodGroup: unit %+v, want admitted again and not started", u)
	}
	syncVolcanoStatus(t, c, vcc)
	if got := volcanoStatus(t, vcc, "job"); got.Phase != vc.PodGroupInqueue || got.Running != 0 {
		t.Errorf("recreated PodGroup: %s with %d running, want Inqueue with none: its old pods are terminating", got.Phase, got.Running)
	}
	// A terminating pod's late update does not bring it back.
	podEvent(c, next(pods[0], phase(v1.PodRunning)))
	if g := c.groups[key("ns", "job")]; g == nil || len(g.members) != 0 {
		t.Errorf("recreated PodGroup: members %v, want none", g.members)
	}
}
