package perf

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// rackLabel is the rack key of the shipped configuration's
// CalderaGangPlacement topologyKeys (manifests/scheduler/config.yaml).
const rackLabel = "topology.caldera.dev/rack"

// Priorities of W7's victims and preemptors (harness PriorityClasses).
const (
	lowPriority  int32 = 1
	highPriority int32 = 1000
)

// victimsNamespace holds W7's bound low-priority pods.
const victimsNamespace = "perf-victims"

// Preempt is W7's set-up: every node is full of bound low-priority pods
// before the scheduler starts, VictimsPerNode of CPU each (the node's whole
// CPU together), in gangs of VictimGang members on consecutive nodes (with
// minMember VictimGang on profiles with Caldera's gang form, so a victim
// gang goes whole or not at all; plain pods on the others). The workload's
// own pods request the same CPU at a higher priority: each needs one
// victim's room, so every preemptor pod must evict.
type Preempt struct {
	CPU            string
	VictimsPerNode int
	VictimGang     int
}

// victims is the number of low-priority pods: every node full.
func (w Workload) victims() int { return w.Nodes * w.Preempt.VictimsPerNode }

// victimGroupName names W7's victim gang g.
func victimGroupName(g int) string { return fmt.Sprintf("low-%d", g) }

// victimPod is W7's low-priority pod i, bound to node i / VictimsPerNode:
// gang i / VictimGang then spans VictimGang / VictimsPerNode whole nodes.
func (w Workload) victimPod(p Profile, i int) *v1.Pod {
	pr := w.Preempt
	b := harness.Pod(victimsNamespace, fmt.Sprintf("low-%d", i)).CPU(pr.CPU).Mem(podMem).
		Scheduler(p.SchedulerName).Priority(lowPriority)
	if p.Gang == GangCaldera {
		b.Group(victimGroupName(i / pr.VictimGang))
	}
	pod := b.Obj()
	pod.Spec.NodeName = node(i / pr.VictimsPerNode).Name
	return pod
}

// createVictims creates W7's priority classes, victim gangs and bound
// victims, and starts counting their deletions (the returned function
// reads the count). The counter also finishes each victim's graceful
// deletion, as the kubelet the harness does not run would: upstream's
// preemption waits for a nominated node's terminating victims to leave.
func createVictims(ctx context.Context, t *testing.T, env *harness.Env, w Workload, p Profile) (func() int, error) {
	env.EnsurePriorityClass(t, lowPriority)
	env.EnsurePriorityClass(t, highPriority)
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victimsNamespace}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	pr := w.Preempt
	if p.Gang == GangCaldera {
		gangs := (w.victims() + pr.VictimGang - 1) / pr.VictimGang
		err := parallel(ctx, gangs, func(ctx context.Context, g int) error {
			pg := harness.PodGroup(victimsNamespace, victimGroupName(g), int32(pr.VictimGang))
			if _, err := env.PGClient.SchedulingV1alpha1().PodGroups(victimsNamespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating victim group %s: %w", pg.Name, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// The first through the harness, which waits out the Priority admission
	// plugin's informer not knowing the new classes yet; by then it knows
	// both, for the victims and for the preemptors created later.
	env.CreatePod(t, w.victimPod(p, 0))
	err := parallel(ctx, w.victims()-1, func(ctx context.Context, i int) error {
		pod := w.victimPod(p, i+1)
		if _, err := env.Client.CoreV1().Pods(victimsNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating victim %s: %w", pod.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return env.CountDeletions(t, victimsNamespace), nil
}

// Issue 21's workloads. W7: preemptors in gangs of 8, each member needing
// one victim's room (a victim gang of 8 spans 4 nodes, so one victim gang
// frees room for one preemptor gang); Caldera against DefaultPreemption on
// the same pods without gangs. W8: CalderaGangPlacement's cost with 256-
// and 1024-member gangs on nodes in racks of 50.
var (
	w7Preempt   = Preempt{CPU: "16", VictimsPerNode: 2, VictimGang: 8}
	w7Profiles  = []string{ProfileDefault, ProfileCaldera}
	w8Profiles  = []string{ProfileCaldera, ProfileCalderaNoPlacement}
	w8RackNodes = 50
)

// scaleWorkloads are W7 and W8 at the quick and full sizes.
func scaleWorkloads(size string) []Workload {
	w7nodes, w7gangs, w8nodes := 100, 5, 250
	if size == "full" {
		w7nodes, w7gangs, w8nodes = 1000, 25, 1000
	}
	out := []Workload{
		{Name: "W7", Nodes: w7nodes, Groups: w7gangs, GroupSize: 8, Gang: true, Preempt: &w7Preempt, Profiles: w7Profiles},
		{Name: "W8-256", Nodes: w8nodes, Groups: 2, GroupSize: 256, Gang: true, RackSize: min(w8RackNodes, w8nodes/5), Profiles: w8Profiles},
	}
	if size == "full" {
		out = append(out, Workload{Name: "W8-1024", Nodes: w8nodes, Groups: 1, GroupSize: 1024, Gang: true, RackSize: w8RackNodes, Profiles: w8Profiles})
	}
	return out
}

// scaleSize is make bench-scale: issue 21's 5000 nodes. W1 and W2 at 5000
// nodes, W7 at 1000 and 5000, W8 at 5000, W5 over 150,000 bound pods.
func scaleSize() []Workload {
	const nodes = 5000
	all := []string{ProfileDefault, ProfileCaldera, ProfileUpstream}
	return []Workload{
		{Name: "W1", Nodes: nodes, Groups: 10_000, GroupSize: 1, Profiles: []string{ProfileDefault, ProfileCaldera}},
		{Name: "W2", Nodes: nodes, Groups: 1250, GroupSize: 8, Gang: true, Profiles: all},
		{Name: "W7-1000", Nodes: 1000, Groups: 25, GroupSize: 8, Gang: true, Preempt: &w7Preempt, Profiles: w7Profiles},
		{Name: "W7-5000", Nodes: nodes, Groups: 25, GroupSize: 8, Gang: true, Preempt: &w7Preempt, Profiles: w7Profiles},
		{Name: "W8-256", Nodes: nodes, Groups: 4, GroupSize: 256, Gang: true, RackSize: w8RackNodes, Profiles: w8Profiles},
		{Name: "W8-1024", Nodes: nodes, Groups: 1, GroupSize: 1024, Gang: true, RackSize: w8RackNodes, Profiles: w8Profiles},
		{Name: "W5", Nodes: nodes, Groups: 1, GroupSize: 1, Prebound: 150_000, PreboundGangSize: 8, LiveHeap: true, Profiles: []string{ProfileDefault, ProfileCaldera}},
	}
}
