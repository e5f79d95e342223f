package reclaim

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreEnqueue holds a preemptor while its asynchronous evictions run, as
// DefaultPreemption does.
func (pl *Reclaim) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if pl.fts.EnableAsyncPreemption && pl.executor.IsPodRunningPreemption(pod.UID) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for the evictions for this pod to finish")
	}
	return nil
}

// EventsToRegister: a preemptor held by PreEnqueue is released by the
// Executor itself when its evictions finish; the event is registered only
// so that the scheduler knows this plugin can gate pods.
func (pl *Reclaim) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	if !pl.fts.EnableAsyncPreemption {
		return nil, nil
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: skip},
	}, nil
}

func skip(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) { return fwk.QueueSkip, nil }
