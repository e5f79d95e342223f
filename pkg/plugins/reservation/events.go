package reservation

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// EventsToRegister lists the events that can give a refused pod the room
// it was refused: room freed on a node, or room added. A reservation that
// ends or moves changes no object kube-scheduler watches; a pod it refused
// is tried again on the next such event, or when kube-scheduler flushes its
// unschedulable pods (podMaxInUnschedulablePodsDuration, 5 minutes).
func (pl *Reservation) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// kube-scheduler's pod informer drops finished pods (Succeeded,
		// Failed), so a pod that finishes is an assigned pod deleted too.
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: afterPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}, QueueingHintFn: afterNodeGrew},
	}, nil
}

// afterPodDeleted queues the pod when the deleted pod held room: it was
// bound, or nominated (kube-scheduler reports a nominated pod's deletion as
// an assigned pod's).
func afterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	deleted, _, err := schedutil.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "" {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("A pod holding room was deleted: reserved room may be left over", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
	return fwk.Queue, nil
}

// afterNodeGrew queues the pod for a new node, or a node whose allocatable
// grew in some resource; a node that shrank or kept its size frees nothing.
func afterNodeGrew(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	old, node, err := schedutil.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if old == nil {
		return fwk.Queue, nil
	}
	for name, q := range node.Status.Allocatable {
		if was, ok := old.Status.Allocatable[name]; !ok || q.Cmp(was) > 0 {
			logger.V(5).Info("A node's allocatable grew", "pod", klog.KObj(pod), "node", klog.KObj(node), "resource", name)
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}
