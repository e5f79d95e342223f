package status

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/disruption"
)

// protectPerPass bounds the patches ProtectPods makes in one pass. The
// writer shares the scheduler's client, whose rate limit (kube-scheduler's
// default 50 requests a second, burst 100) binds and every other status
// write draw on too: a restart, or the first start of this version, finds
// every running gang member unannotated at once (75,000 of them in the
// 150,000-pod restart benchmark), and patching them all in one pass would
// hold the writer and starve binds for minutes. At the default one-second
// period this is 20 patches a second; the rest wait in the source.
const protectPerPass = 20

// ProtectPods patches into each bound gang member the source hands out
// (protectPerPass at most) the annotations that keep cluster autoscalers
// from scaling its node down (package disruption). Only the keys the pod
// lacks are written (a merge patch touches nothing else), so a user's own
// value is kept. A pod gone meanwhile needs nothing; another failure is
// handed back and retried at a later pass.
func (w *Writer) ProtectPods(ctx context.Context) {
	if w.cl.Pods == nil {
		return
	}
	logger := klog.FromContext(ctx)
	for _, pod := range w.src.Protection().Take(protectPerPass) {
		missing := disruption.Missing(pod.Annotations)
		if missing == nil {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": missing}})
		if err != nil {
			logger.Error(err, "Cannot encode the annotations protecting a gang member", "pod", klog.KObj(pod))
			continue
		}
		_, err = w.cl.Pods.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			logger.V(4).Info("Protected a gang member from autoscalers' scale-down", "pod", klog.KObj(pod))
		case apierrors.IsNotFound(err):
		default:
			writeErrors.WithLabelValues(WriteProtectPod).Inc()
			logger.Error(err, "Cannot annotate a gang member against autoscalers' scale-down; will retry", "pod", klog.KObj(pod))
			w.src.Protection().Retry(pod)
		}
	}
}
