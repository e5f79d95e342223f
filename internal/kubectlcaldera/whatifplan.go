package kubectlcaldera

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/reclaim"
)

// PlanView is the eviction plan a unit admitted on a plan's room needs:
// what CalderaReclaim would decide for it with the snapshot's pods.
type PlanView struct {
	// Action is reclaim (from other queues above their deserved share) or
	// preempt (lower-priority groups of the unit's own queue).
	Action string `json:"action,omitempty"`
	// Victims are the pods that would be evicted (namespace/name).
	Victims []string `json:"victims,omitempty"`
	// Nodes is where each member that needs a node would go once they
	// leave, the first member first.
	Nodes []string `json:"nodes,omitempty"`
	// Why says why no plan was found, when none was.
	Why string `json:"why,omitempty"`
}

// evictionPlan runs CalderaReclaim's decision (pkg/reclaim, fed by the
// cache as the plugin feeds it) for pod's unit over the snapshot's pods and
// nodes. The plugin's own pass first runs the scheduler's filters to say
// which nodes evictions could help on; here every schedulable node counts,
// so a pod with node constraints may be shown a node its filters refuse.
func evictionPlan(c *cache.Cache, pod *corev1.Pod, pods []*corev1.Pod, nodes []*corev1.Node, s schedulerSettings, now time.Time) PlanView {
	var running []*corev1.Pod
	onNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		running = append(running, p)
		onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
	}
	in, ok, why := c.ReclaimInput(pod, running, func(*corev1.Pod) bool { return false })
	if !ok {
		return PlanView{Why: why}
	}
	for _, n := range nodes {
		ni := framework.NewNodeInfo(onNode[n.Name]...)
		ni.SetNode(n)
		in.Nodes = append(in.Nodes, reclaim.Node{Name: n.Name, Free: convert.NodeFree(ni), Eligible: !n.Spec.Unschedulable})
	}
	in.Options = reclaim.Options{Reclaim: s.reclaim, Preempt: s.preempt, MinRuntime: s.minRuntime, Now: now}
	plan, ok, why := reclaim.Decide(in)
	if !ok {
		return PlanView{Why: why}
	}
	v := PlanView{Action: plan.Mode.String(), Nodes: plan.Placement}
	for _, i := range plan.Victims {
		v.Victims = append(v.Victims, in.Pods[i].ID)
	}
	return v
}
