package reclaim

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
)

// PostFilter runs when pod fits no node: it plans evictions that let pod's
// whole group fit and hands the plan to the upstream Evaluator, which
// re-runs the filters on the planned node, nominates it and evicts.
func (pl *Reclaim) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	if node, inFlight := pl.evictions.GangPlan(pod); inFlight {
		// The gang's plan is still evicting: planning again would count
		// the room its victims are freeing as used and evict more. The
		// member keeps (or gets) the node the plan freed for it, so that no
		// other pod takes that room, and is retried as the victims leave.
		attempts.WithLabelValues("waiting").Inc()
		st := fwk.NewStatus(fwk.Unschedulable, "reclaim: waiting for the victims of the gang's plan to leave")
		if node == "" {
			return nil, st
		}
		return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node}}, st
	}
	if ok, msg := pl.mayPreempt(pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		// As upstream's Evaluator: a pod that may not preempt (now) keeps
		// its nominated node, e.g. while the victims evicted for it on
		// that node still terminate.
		attempts.WithLabelValues("none").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, "reclaim: "+msg)
	}
	p, why := pl.plan(ctx, state, pod, m)
	if p == nil {
		attempts.WithLabelValues("none").Inc()
		logger.V(4).Info("No reclaim or preemption", "pod", klog.KObj(pod), "reason", why)
		// No plan: the pod's nominated node, if any, is dropped, as
		// upstream's Evaluator drops it when preemption cannot help. Kept,
		// a nomination from an earlier plan (or an earlier process) goes on
		// holding that room against every pod of lower priority while this
		// pod cannot use it (seed 179 of the randomized harness: a gang's
		// extra, refused for its queue's capability, kept a node empty).
		return framework.NewPostFilterResultWithNominatedNode(""), fwk.NewStatus(fwk.Unschedulable, "reclaim: "+why)
	}
	pl.mu.Lock()
	pl.plans[pod.UID] = p
	pl.mu.Unlock()
	defer func() {
		pl.mu.Lock()
		delete(pl.plans, pod.UID)
		pl.mu.Unlock()
	}()

	result, status := pl.evaluator.Preempt(ctx, state, pod, m)
	if !status.IsSuccess() {
		pl.abandon(pod, p)
		attempts.WithLabelValues("filtered").Inc()
		logger.V(3).Info("Planned victims do not make room", "pod", klog.KObj(pod), "node", p.node, "status", status.Message())
		// Unschedulable whatever the Evaluator's code: CalderaGang runs
		// after this plugin and must still release a gang that got no
		// plan, which an Error or UnschedulableAndUnresolvable would skip.
		return result, fwk.NewStatus(fwk.Unschedulable, "reclaim: "+status.Message())
	}
	attempts.WithLabelValues(p.mode.String()).Inc()
	logger.V(2).Info("Evicting for a group that does not fit", "pod", klog.KObj(pod), "action", p.mode.String(), "node", p.node, "victims", len(p.victims))
	pl.holdForGang(ctx, pod, p)
	return result, status
}

// holdForGang gives every other member of pod's gang the room the plan
// freed for it: the cache remembers the node (a member that fails Filter
// while the victims leave is nominated there again, see PostFilter), and
// the member is nominated to it in the scheduler's memory now, so that
// until the gang binds no pod of lower or equal priority takes the room.
// The pod itself is nominated by the Evaluator.
func (pl *Reclaim) holdForGang(ctx context.Context, pod *v1.Pod, p *plan) {
	if p.group == "" || len(p.members) == 0 {
		return
	}
	sibs := pl.evictions.HoldForGang(pod, p.group, p.members)
	logger := klog.FromContext(ctx)
	for uid, node := range p.members {
		if uid == pod.UID {
			continue
		}
		sib := sibs[uid]
		if sib == nil || sib.Spec.NodeName != "" {
			continue
		}
		pi, err := framework.NewPodInfo(sib)
		if err != nil {
			continue
		}
		pl.handle.AddNominatedPod(logger, pi, &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node})
	}
}

// mayPreempt applies DefaultPreemption's own eligibility: preemptionPolicy
// Never, and no second round while victims on the nominated node are
// still terminating.
func (pl *Reclaim) mayPreempt(pod *v1.Pod, nominatedStatus *fwk.Status) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, "not eligible due to preemptionPolicy=Never"
	}
	nom := pod.Status.NominatedNodeName
	if nom == "" || nominatedStatus.Code() == fwk.UnschedulableAndUnresolvable {
		return true, ""
	}
	if n, _ := pl.handle.SnapshotSharedLister().NodeInfos().Get(nom); n != nil {
		for _, pi := range n.GetPods() {
			if preemption.PodTerminatingByPreemption(pi.GetPod()) {
				return false, "victims on the nominated node are still terminating"
			}
		}
	}
	return true, ""
}
