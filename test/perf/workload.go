package perf

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/disruption"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// Workload is a cluster size and a set of pods, in groups, created at once.
type Workload struct {
	// Name is the workload's name in the issue (W1, W2, W3-gang, W3-plain).
	Name string
	// Nodes is the number of Node objects.
	Nodes int
	// Groups of GroupSize pods each; GroupSize 1 means plain pods.
	Groups, GroupSize int
	// Gang makes each group a gang (minMember = GroupSize) on profiles that
	// have gang semantics.
	Gang bool
	// Profiles are the profile names that run this workload.
	Profiles []string
	// Prebound pods, already bound to the nodes (spec.nodeName set at
	// create), exist before the scheduler starts: W5 times a restarted
	// scheduler's first bind with that many pods to list and account.
	Prebound int
	// PreboundGangSize, when set, puts the first half of the prebound pods
	// in bound gangs of this size (a PodGroup each on profiles with Caldera's
	// gang form): a restarted Caldera rebuilds gangs, not only plain pods,
	// and its member-pod informer holds only gang members, so the live-heap
	// measure (M1) must include some. They carry what an earlier Caldera
	// process wrote on them (preboundAsLeft), as a restart finds them.
	PreboundGangSize int
	// Churn, when set, makes the groups arrive and finish over time (W6)
	// instead of existing at once; Groups is then the number that arrive.
	Churn *Churn
	// LiveHeap measures the live heap after the run (M1): forced
	// collections, so only for workloads whose timing ends before it.
	LiveHeap bool
	// Preempt, when set, fills every node with bound low-priority pods
	// before the scheduler starts and makes the workload's pods the
	// high-priority preemptors (W7).
	Preempt *Preempt
	// RackSize, when set, labels the nodes with CalderaGangPlacement's rack
	// key, RackSize nodes a rack (W8).
	RackSize int
}

// schedulerProcess says whether the workload runs its scheduler in a
// process of its own: those that read the scheduler's live heap, W5 (M1)
// and W6 (per window), so that the heap read is the scheduler's alone.
func (w Workload) schedulerProcess() bool { return w.LiveHeap || w.Churn != nil }

// Pods is the workload's pod count.
func (w Workload) Pods() int { return w.Groups * w.GroupSize }

// Node and pod sizes: every workload fits with room to spare, so the
// numbers measure scheduling, not a search for space. Pods request what
// scheduler_perf's gang pods request.
const (
	nodeCPU, nodeMem, nodePods = "32", "128Gi", "110"
	podCPU, podMem             = "100m", "100Mi"
)

// Sizes returns the workloads of a size: "quick" (make bench, minutes on 2
// cores), "full" (the sizes, make bench-full) or "scale" (issue
// 21's 5000 nodes, make bench-scale).
func Sizes(size string) ([]Workload, error) {
	nodes, plain, gangs, bigGang, prebound := 0, 0, 0, 0, 0
	// Churn: gangs of 8 at 2-3 per second (16-24 pods/s, a tenth of what
	// W2 binds at on a quiet machine), running 10 s, deleted 5 s after.
	churn := Churn{GangsPerSec: 2, RunTime: 10 * time.Second, Linger: 5 * time.Second, Window: 10 * time.Second}
	switch size {
	case "quick":
		churn.Duration = time.Minute
		// 10,000 bound pods: fewer would leave a 1 KiB-per-pod difference
		// inside the noise of a whole-process heap of hundreds of MiB.
		nodes, plain, gangs, bigGang, prebound = 250, 1000, 100, 800, 10_000
	case "full":
		nodes, plain, gangs, bigGang, prebound = 1000, 5000, 600, 2000, 50_000
		churn.Duration, churn.GangsPerSec = 2*time.Minute, 3
	case "scale":
		return scaleSize(), nil
	default:
		return nil, fmt.Errorf("unknown size %q (quick, full, scale)", size)
	}
	all := []string{ProfileDefault, ProfileCaldera, ProfileUpstream}
	return append([]Workload{
		{Name: "W1", Nodes: nodes, Groups: plain, GroupSize: 1, Profiles: []string{ProfileDefault, ProfileCaldera, ProfileCalderaGangsOnly}},
		{Name: "W2", Nodes: nodes, Groups: gangs, GroupSize: 8, Gang: true, Profiles: append(all, ProfileCalderaNoPlacement, ProfileCalderaNoNomination)},
		{Name: "W3-plain", Nodes: nodes, Groups: bigGang, GroupSize: 1, Profiles: []string{ProfileDefault, ProfileCaldera}},
		{Name: "W3-gang", Nodes: nodes, Groups: 1, GroupSize: bigGang, Gang: true, Profiles: []string{ProfileCaldera, ProfileUpstream, ProfileCalderaNoNomination}},
		{Name: "W5", Nodes: nodes, Groups: 1, GroupSize: 1, Prebound: prebound, PreboundGangSize: 8, LiveHeap: true, Profiles: []string{ProfileDefault, ProfileCaldera}},
		{Name: "W6", Nodes: nodes, Groups: churn.gangs(), GroupSize: 8, Gang: true, Churn: &churn, Profiles: all},
	}, scaleWorkloads(size)...), nil
}

// rackNode is Node i of w: node(i), in rack i / RackSize when w has racks.
func (w Workload) rackNode(i int) *v1.Node {
	n := node(i)
	if w.RackSize > 0 {
		n.Labels[rackLabel] = fmt.Sprintf("rack-%d", i/w.RackSize)
	}
	return n
}

// node builds Node i of a workload (status included: the caller writes it
// with UpdateStatus, since create drops it).
func node(i int) *v1.Node {
	rl := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(nodeCPU),
		v1.ResourceMemory: resource.MustParse(nodeMem),
		v1.ResourcePods:   resource.MustParse(nodePods),
	}
	name := fmt.Sprintf("perf-node-%d", i)
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Capacity:    rl,
			Allocatable: rl.DeepCopy(),
			Phase:       v1.NodeRunning,
			Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		},
	}
}

// groupName names group g of a workload.
func groupName(g int) string { return fmt.Sprintf("g-%d", g) }

// pod builds member m of group g for profile p.
func (w Workload) pod(ns string, p Profile, g, m int) *v1.Pod {
	b := harness.Pod(ns, fmt.Sprintf("p-%d-%d", g, m)).CPU(podCPU).Mem(podMem).
		Scheduler(p.SchedulerName).Labels(map[string]string{groupLabel: strconv.Itoa(g)})
	if w.Gang && p.Gang == GangCaldera {
		b.Group(groupName(g))
	}
	if w.Preempt != nil {
		b.CPU(w.Preempt.CPU).Priority(highPriority)
	}
	pod := b.Obj()
	if w.Gang && p.Gang == GangUpstream {
		pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(groupName(g))}
	}
	return pod
}

// preboundGangs is the number of bound gangs among the prebound pods.
func (w Workload) preboundGangs() int {
	if w.PreboundGangSize <= 1 {
		return 0
	}
	return w.Prebound / 2 / w.PreboundGangSize
}

// boundPod is prebound pod i, bound to a node by its spec, in namespace ns;
// the first preboundGangs()*PreboundGangSize are gang members.
func (w Workload) boundPod(ns string, p Profile, i int) *v1.Pod {
	b := harness.Pod(ns, fmt.Sprintf("b-%d", i)).CPU(podCPU).Mem(podMem).Scheduler(p.SchedulerName)
	// A gang member as Caldera left it: in its group, protected from
	// scale-down. Every profile's copy carries the label and the
	// annotations (the default scheduler reads neither): both profiles
	// list the same pods from the same cluster, so W5 and M1 compare what
	// each scheduler does and keeps, not the objects.
	member := i/max(w.PreboundGangSize, 1) < w.preboundGangs()
	if member {
		b.Group(boundGroupName(i / w.PreboundGangSize))
	}
	pod := b.Obj()
	pod.Spec.NodeName = node(i % w.Nodes).Name
	if member {
		pod.Annotations = disruption.Missing(pod.Annotations)
	}
	return pod
}

// boundGroup is prebound gang g as an earlier Caldera process left it: its
// admission (admitted-at) and its status written (createPrebound writes
// the status after the create). Its members carry the annotations that
// keep autoscalers from scaling their nodes down (boundPod). Without these
// W5 timed a first start over 9,375 running gangs Caldera never admitted:
// the first pass admitted every one during the handlers' sync, wrote each
// one's admission and status, and 75,000 members waited to be annotated,
// none of which a restart does.
func (w Workload) boundGroup(ns string, g int) *v1alpha1.PodGroup {
	pg := harness.PodGroup(ns, boundGroupName(g), int32(w.PreboundGangSize))
	// Not before the object's creation, which follows: an admission older
	// than its group is a recreated group's stale one, and ignored.
	at := time.Now().Add(time.Minute).UTC()
	pg.Annotations = map[string]string{qapi.AdmittedAtAnnotation: at.Format(time.RFC3339)}
	// Its members are bound but Pending (no kubelet runs them): Caldera
	// writes such a gang as Scheduling.
	pg.Status = v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupScheduling}
	return pg
}

// boundGroupName names prebound gang g.
func boundGroupName(g int) string { return fmt.Sprintf("b-%d", g) }

// calderaGroup is group g as a scheduler-plugins PodGroup.
func (w Workload) calderaGroup(ns string, g int) *v1alpha1.PodGroup {
	return harness.PodGroup(ns, groupName(g), int32(w.GroupSize))
}

// upstreamGroup is group g as a scheduling.k8s.io/v1beta1 PodGroup with a
// gang policy, the shape of scheduler_perf's gangscheduling template.
func (w Workload) upstreamGroup(ns string, g int) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groupName(g)},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(w.GroupSize)},
			},
		},
	}
}
