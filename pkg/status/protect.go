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

// ProtectPods patches into each bound gang member the source hands out
// the annotations that keep cluster autoscalers from scaling its node
// down (package disruption). Only the keys the pod lacks are written (a
// merge patch touches nothing else), so a user's own value is kept. A pod
// gone meanwhile needs nothing; another failure is handed back and
// retried at the next pass.
func (w *Writer) ProtectPods(ctx context.Context) {
	if w.cl.Pods == nil {
		return
	}
	logger := klog.FromContext(ctx)
	for _, pod := range w.src.PodsToProtect() {
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
			w.src.RetryProtect(pod)
		}
	}
}
