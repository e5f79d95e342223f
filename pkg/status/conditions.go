package status

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ReasonWaitingForAdmission is the reason of the PodScheduled=False
// condition of a pod whose group its queue has not admitted; the message is
// the admission verdict. A gated pod runs no scheduling cycle, so without it
// the pod showed no condition at all. It is not "Unschedulable" on purpose:
// cluster-autoscaler adds nodes for pods whose PodScheduled condition is
// False with reason Unschedulable, and no new node admits a pod that a
// queue's capability, its fair share or a ResourceQuota holds back.
const ReasonWaitingForAdmission = "WaitingForAdmission"

// ReasonWaitingForMembers and ReasonWaitingForPodGroup are the reasons of
// the PodScheduled=False condition of a gang's pods while the gang has
// fewer than minMember members, or no PodGroup: CalderaGang holds them in
// PreEnqueue, so they too run no cycle, and a new node would not help them
// either.
const (
	ReasonWaitingForMembers  = "WaitingForMembers"
	ReasonWaitingForPodGroup = "WaitingForPodGroup"
)

// ours reports whether a PodScheduled reason is one the writer sets.
func ours(reason string) bool {
	return reason == ReasonWaitingForAdmission || reason == ReasonWaitingForMembers || reason == ReasonWaitingForPodGroup
}

// tellWaiting puts a refusal's verdict into the PodScheduled condition of
// the unit's waiting pods, or takes it out of them on admission (the
// scheduler's own cycle then writes what happens next). A pod whose
// condition already says so is not written: at most one write per pod per
// change of verdict.
func (w *Writer) tellWaiting(ctx context.Context, a Admission) {
	if w.cl.Pods == nil {
		return
	}
	if a.AwaitingRoom {
		// Its pods run scheduling cycles, which mark them Unschedulable:
		// the reason cluster autoscalers act on, not to be overwritten.
		return
	}
	for _, p := range a.Waiting {
		if a.Admitted {
			w.untell(ctx, p)
		} else {
			w.tell(ctx, p, ReasonWaitingForAdmission, a.Message)
		}
	}
}

// podScheduled returns pod's PodScheduled condition and its index, or -1.
func podScheduled(pod *v1.Pod) (*v1.PodCondition, int) {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == v1.PodScheduled {
			return c, i
		}
	}
	return nil, -1
}

func (w *Writer) tell(ctx context.Context, pod *v1.Pod, reason, message string) {
	old, _ := podScheduled(pod)
	if old != nil && old.Status == v1.ConditionFalse && old.Reason == reason && old.Message == message {
		return
	}
	cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: metav1.Now()}
	if old != nil && old.Status == v1.ConditionFalse {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	// A strategic merge patch merges conditions by type, so the pod's other
	// conditions are left alone; the uid keeps a pod recreated under the
	// name from being told another pod's verdict.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []v1.PodCondition{cond}},
	})
	if err != nil {
		return
	}
	w.patchPodStatus(ctx, pod, types.StrategicMergePatchType, patch, "Cannot tell a pod why it waits")
}

func (w *Writer) untell(ctx context.Context, pod *v1.Pod) {
	old, i := podScheduled(pod)
	if old == nil || !ours(old.Reason) {
		return
	}
	// The test operations make the removal conditional: if the scheduler
	// has written its own PodScheduled condition since (bound, or
	// Unschedulable after a cycle), the patch fails and that one stays.
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"test","path":"/status/conditions/%d/reason","value":%q},{"op":"remove","path":"/status/conditions/%d"}]`,
		pod.UID, i, old.Reason, i)
	w.patchPodStatus(ctx, pod, types.JSONPatchType, []byte(patch), "Cannot take the verdict out of a pod's condition")
}

func (w *Writer) patchPodStatus(ctx context.Context, pod *v1.Pod, pt types.PatchType, patch []byte, failure string) {
	_, err := w.cl.Pods.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, pt, patch, metav1.PatchOptions{}, "status")
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// Gone, recreated, or changed by the scheduler since: nothing to say.
	default:
		writeErrors.WithLabelValues(WritePodCondition).Inc()
		klog.FromContext(ctx).Error(err, failure, "pod", klog.KObj(pod))
	}
}

// tellMembers puts a gang's waiting stage into its waiting pods' condition,
// or takes it out once the gang no longer waits for members or a PodGroup.
func (w *Writer) tellMembers(ctx context.Context, g Group) {
	if w.cl.Pods == nil {
		return
	}
	for _, p := range g.Waiting {
		if g.WaitingReason == "" {
			w.untell(ctx, p)
		} else {
			w.tell(ctx, p, g.WaitingReason, g.WaitingMessage)
		}
	}
}
