package status

import (
	"context"
	"time"

	sched "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
)

// UpstreamSource is what the writer reads of upstream's PodGroups
// (scheduling.k8s.io/v1beta1), when they are read (upstream.Reader: the
// API served and left to Caldera).
type UpstreamSource interface {
	// UpstreamPodGroup returns the PodGroup as the state's informer has it.
	UpstreamPodGroup(key types.NamespacedName) (*sched.PodGroup, bool)
}

func (w *Writer) upstream() (UpstreamSource, bool) {
	if w.cl.Pods == nil {
		return nil, false
	}
	return w.cl.UpstreamObjects, w.cl.UpstreamObjects != nil
}

// writeUpstreamGroup sets Caldera's conditions on an upstream PodGroup
// (upstream.Conditions) when they differ from the object's, through its
// status subresource, leaving upstream's own conditions as they are: the
// update carries the conditions read last, so one written meanwhile fails
// it with a conflict and the retry reads it. A failure hands the group
// back.
func (w *Writer) writeUpstreamGroup(ctx context.Context, g Group) {
	us, ok := w.upstream()
	if !ok {
		return
	}
	pg, ok := us.UpstreamPodGroup(g.Key)
	if !ok || string(pg.UID) != g.Source.UID {
		return // gone, or another object by now
	}
	client := w.cl.Pods.SchedulingV1beta1().PodGroups(g.Key.Namespace)
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			latest, err := client.Get(ctx, g.Key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if string(latest.UID) != g.Source.UID {
				return nil
			}
			pg = latest
		}
		first = false
		want := upstream.Conditions(pg.Status.Conditions, g.Progress, pg.Generation, metav1.NewTime(time.Now().Truncate(time.Second)))
		if equality.Semantic.DeepEqual(pg.Status.Conditions, want) {
			return nil
		}
		cp := pg.DeepCopy()
		cp.Status.Conditions = want
		_, err := client.UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		writeErrors.WithLabelValues(WritePodGroupStatus).Inc()
		klog.FromContext(ctx).Error(err, "Cannot write upstream PodGroup conditions; will retry", "podGroup", g.Key.String())
		w.src.RetryGroupStatus(g.Key)
	}
}

// patchUpstreamPodGroup merge-patches an upstream PodGroup's metadata.
func (w *Writer) patchUpstreamPodGroup(ctx context.Context, namespace, name string, patch []byte) error {
	if w.cl.Pods == nil {
		return nil
	}
	_, err := w.cl.Pods.SchedulingV1beta1().PodGroups(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
