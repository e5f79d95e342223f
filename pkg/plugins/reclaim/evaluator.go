package reclaim

import (
	"context"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
)

// The methods below are preemption.Interface: the upstream Evaluator calls
// them back while it carries out the plan PostFilter made, so each answers
// from pl.plans.

// GetOffsetAndNumCandidates starts the Evaluator's dry run at the planned
// node and asks for one candidate, the only one there can be: the others
// answer "not the planned node", but the dry run clones the cycle state
// and the node and lists its victims before asking, and over every node
// of W7 at 5000 nodes that was as much CPU as the plan. With one candidate
// found the dry run stops; when the planned node fails, it goes on over
// every node as before, so the answer is the same. The Evaluator lists
// the potential nodes as plan did, from the same snapshot; should the
// count differ, every node is tried from the first.
func (pl *Reclaim) GetOffsetAndNumCandidates(n int32) (int32, int32) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.plans) == 1 { // the pod in PostFilter: cycles run one at a time
		for _, p := range pl.plans {
			if p.potential == n && p.at < n {
				return p.at, 1
			}
		}
	}
	return 0, n
}

// CandidatesToVictimsMap maps each candidate node to its victims.
func (pl *Reclaim) CandidatesToVictimsMap(candidates []preemption.Candidate) map[string]*extenderv1.Victims {
	m := make(map[string]*extenderv1.Victims, len(candidates))
	for _, c := range candidates {
		m[c.Name()] = c.Victims()
	}
	return m
}

// PodEligibleToPreemptOthers: only a pod this plugin has just planned for.
func (pl *Reclaim) PodEligibleToPreemptOthers(_ context.Context, pod *v1.Pod, _ *fwk.Status) (bool, string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.plans[pod.UID] == nil {
		return false, "no reclaim plan"
	}
	return true, ""
}

// SelectVictimsOnNode returns the plan's victims when nodeInfo is the
// planned node and the scheduler's filters pass there with the victims
// gone. Victims on other nodes (the rest of a gang's room, or a victim gang
// taken whole) are returned too: the Executor evicts them all.
func (pl *Reclaim) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo, _ []*preemption.DomainVictim, pdbs []*policyv1.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	pl.mu.Lock()
	p := pl.plans[pod.UID]
	pl.mu.Unlock()
	if p == nil || nodeInfo.Node().Name != p.node {
		return nil, 0, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "not the planned node")
	}
	logger := klog.FromContext(ctx)
	here := map[types.UID]bool{}
	for _, v := range p.victims {
		if v.Spec.NodeName == p.node {
			here[v.UID] = true
		}
	}
	// The plan counted the room of pods already leaving as free; the
	// filters must see the node the same way, or every plan that relies on
	// a terminating victim's room fails here.
	var leaving []fwk.PodInfo
	for _, pi := range nodeInfo.GetPods() {
		if p.leaving[pi.GetPod().UID] && !here[pi.GetPod().UID] {
			leaving = append(leaving, pi)
		}
	}
	for _, pi := range leaving {
		if err := nodeInfo.RemovePod(logger, pi.GetPod()); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
		if st := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !st.IsSuccess() {
			return nil, 0, st
		}
	}
	// RemovePod reorders the node's pod list: pick the victims first.
	var picked []fwk.PodInfo
	for _, pi := range nodeInfo.GetPods() {
		if here[pi.GetPod().UID] {
			picked = append(picked, pi)
		}
	}
	var victims []preemption.Victim
	for _, pi := range picked {
		if err := nodeInfo.RemovePod(logger, pi.GetPod()); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
		if st := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !st.IsSuccess() {
			return nil, 0, st
		}
		victims = append(victims, preemption.NewPodVictim(pi, nil, nil))
	}
	if st := pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo); !st.IsSuccess() {
		return nil, 0, st
	}
	violating, _ := preemption.FilterVictimsWithPDBViolation(victims, pdbs)
	n := 0
	for _, v := range violating {
		n += v.ViolateCount
	}
	return p.victims, n, nil
}

// OrderedScoreFuncs: nil, the default order (one candidate at most).
func (pl *Reclaim) OrderedScoreFuncs(context.Context, map[string]*extenderv1.Victims) []func(string) int64 {
	return nil
}
