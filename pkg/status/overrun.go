package status

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// ReasonOverranRunLimit is the reason of the Events about a pod evicted for
// running past its run-time limit into a reservation.
const ReasonOverranRunLimit = "OverranRunLimit"

// overrunTimeout bounds the API calls of one eviction.
const overrunTimeout = 10 * time.Second

// OverrunEviction is a pod the source chose to evict because it ran past
// the run-time limit it declared by annotation into a reservation whose
// start has come.
type OverrunEviction struct {
	Pod *v1.Pod
	// Queue is the pod's queue, the label of caldera_overrun_evictions_total.
	Queue string
	// Message says what the pod overran and whose reservation it holds.
	Message string
	// VictimGroup is the pod's PodGroup, nil without one; Reserved is the
	// reservation's PodGroup (or pod), told by ReservedBy's recorder.
	VictimGroup runtime.Object
	Reserved    runtime.Object
	ReservedBy  string
}

// OverrunSource is the part of Source EvictOverruns reads.
type OverrunSource interface {
	// OverrunEvictions returns the evictions chosen since the last call.
	OverrunEvictions() []OverrunEviction
	// FinishOverrun reports how e went (err nil: made); false when the
	// source no longer expects it.
	FinishOverrun(e OverrunEviction, err error) bool
	Recorder(schedulerName string) events.EventRecorderLogger
}

// EvictOverruns makes the evictions src chose: the DisruptionTarget
// condition and a DELETE that honours the pod's grace period, as
// upstream's preemption Executor makes them, then the Events on the pod,
// its PodGroup and the reservation's group. A failed eviction is handed
// back, so the source may choose the pod again.
func EvictOverruns(ctx context.Context, cs kubernetes.Interface, src OverrunSource) {
	logger := klog.FromContext(ctx)
	for _, e := range src.OverrunEvictions() {
		p := e.Pod
		callCtx, cancel := context.WithTimeout(ctx, overrunTimeout)
		err := evictOverrun(callCtx, cs, e)
		cancel()
		if !src.FinishOverrun(e, err) || err != nil {
			logger.V(2).Info("Could not evict a pod past its run-time limit", "pod", klog.KObj(p), "err", err)
			continue
		}
		logger.V(2).Info("Evicted a pod past its run-time limit", "pod", klog.KObj(p), "why", e.Message)
		overrunEvictions.WithLabelValues(e.Queue).Inc()
		rec := src.Recorder(p.Spec.SchedulerName).WithLogger(logger)
		rec.Eventf(p, nil, v1.EventTypeWarning, ReasonOverranRunLimit, "Evicting", "%s", e.Message)
		if e.VictimGroup != nil {
			rec.Eventf(e.VictimGroup, nil, v1.EventTypeWarning, ReasonOverranRunLimit, "Evicting", "%s/%s: %s", p.Namespace, p.Name, e.Message)
		}
		if e.Reserved != nil {
			src.Recorder(e.ReservedBy).WithLogger(logger).Eventf(e.Reserved, nil, v1.EventTypeNormal, ReasonOverranRunLimit, "Evicting", "%s/%s: %s", p.Namespace, p.Name, e.Message)
		}
	}
}

// evictOverrun gives e's pod the DisruptionTarget condition and deletes it
// (with its grace period, and only that pod: not one of the same name made
// since). A pod already gone is no error.
func evictOverrun(ctx context.Context, cs kubernetes.Interface, e OverrunEviction) error {
	p := e.Pod
	st := p.Status.DeepCopy()
	if apipod.UpdatePodCondition(st, &v1.PodCondition{
		Type:               v1.DisruptionTarget,
		ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&p.Status, p.Generation, v1.DisruptionTarget),
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonPreemptionByScheduler,
		Message:            p.Spec.SchedulerName + ": " + e.Message,
	}) {
		if err := schedutil.PatchPodStatus(ctx, cs, p.Name, p.Namespace, &p.Status, st); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
