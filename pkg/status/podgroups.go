package status

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// WriteGroups posts each group's notice and writes the status of those
// whose PodGroup's differs from what it should be, each in its dialect's
// way. A failed write hands the group back to the source, so the next pass
// tries again.
func (w *Writer) WriteGroups(ctx context.Context, work []Group) {
	for _, g := range work {
		w.emit(g)
		w.tellMembers(ctx, g)
		if g.Source == nil {
			continue
		}
		switch g.Source.Dialect {
		case groupspec.Volcano:
			w.writeVolcanoGroup(ctx, g)
		case groupspec.Upstream:
			w.writeUpstreamGroup(ctx, g)
		default:
			w.writePodGroup(ctx, g)
		}
	}
}

// writePodGroup writes a scheduler-plugins PodGroup's verdict annotation
// and status (schedplugins.Status) when they differ from the object's, as
// the informer has it.
func (w *Writer) writePodGroup(ctx context.Context, g Group) {
	pg, ok := w.podGroup(g.Key)
	if !ok || string(pg.UID) != g.Source.UID {
		return // gone, or another object by now
	}
	w.writeVerdict(ctx, g, pg)
	if equality.Semantic.DeepEqual(pg.Status, schedplugins.Status(pg.Status, g.Progress)) {
		return
	}
	if err := w.writeStatus(ctx, g, pg); err != nil && !apierrors.IsNotFound(err) {
		writeErrors.WithLabelValues(WritePodGroupStatus).Inc()
		klog.FromContext(ctx).Error(err, "Cannot write PodGroup status; will retry", "podGroup", g.Key.String())
		w.src.RetryGroupStatus(g.Key)
	}
}

// podGroup reads a scheduler-plugins PodGroup as its informer has it.
func (w *Writer) podGroup(key types.NamespacedName) (*v1alpha1.PodGroup, bool) {
	if w.cl.PodGroupObjects == nil {
		return nil, false
	}
	return w.cl.PodGroupObjects.PodGroup(key)
}

// writeStatus updates the status of pg (the informer's copy) from g's
// progress, reading the object again after a conflict; only the status
// Caldera owns changes.
func (w *Writer) writeStatus(ctx context.Context, g Group, pg *v1alpha1.PodGroup) error {
	client := w.cl.PodGroups.SchedulingV1alpha1().PodGroups(g.Key.Namespace)
	pg = pg.DeepCopy()
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			latest, err := client.Get(ctx, g.Key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if string(latest.UID) != g.Source.UID {
				return nil // replaced: its own work item follows
			}
			pg = latest
		}
		first = false
		pg.Status = schedplugins.Status(pg.Status, g.Progress)
		_, err := client.UpdateStatus(ctx, pg, metav1.UpdateOptions{})
		return err
	})
}

func (w *Writer) emit(g Group) {
	if g.Notice.Reason == "" {
		return
	}
	typ := v1.EventTypeNormal
	if g.Notice.Warning {
		typ = v1.EventTypeWarning
	}
	if g.Source != nil {
		w.src.Recorder(g.Profile).Eventf(GroupRef(*g.Source), nil, typ, g.Notice.Reason, "Scheduling", "%s", g.Notice.Message)
		return
	}
	for _, p := range g.Pods {
		w.src.Recorder(p.Spec.SchedulerName).Eventf(p, nil, typ, g.Notice.Reason, "Scheduling", "%s", g.Notice.Message)
	}
}

// GroupRef is the Event target for a group's PodGroup, of any dialect.
// The scheduler's event scheme does not know PodGroups, so the reference
// is spelled out.
func GroupRef(src groupspec.Source) *v1.ObjectReference {
	return &v1.ObjectReference{
		APIVersion:      src.APIVersion,
		Kind:            "PodGroup",
		Namespace:       src.Namespace,
		Name:            src.Name,
		UID:             types.UID(src.UID),
		ResourceVersion: src.ResourceVersion,
	}
}

// writeVerdict puts the later-stage verdict (Group.Verdict) in the
// PodGroup's verdict annotation, or takes it out, when it differs from
// what the PodGroup says.
func (w *Writer) writeVerdict(ctx context.Context, g Group, pg *v1alpha1.PodGroup) {
	if g.Verdict == nil {
		return
	}
	have, ok := pg.Annotations[qapi.VerdictAnnotation]
	var value any = *g.Verdict
	switch {
	case *g.Verdict == "" && !ok, *g.Verdict != "" && have == *g.Verdict:
		return
	case *g.Verdict == "":
		value = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{qapi.VerdictAnnotation: value}}})
	if err != nil {
		return
	}
	if err := w.patchPodGroup(ctx, *g.Source, patch); err != nil && !apierrors.IsNotFound(err) {
		writeErrors.WithLabelValues(WritePodGroupAnnotation).Inc()
		klog.FromContext(ctx).Error(err, "Cannot record the verdict on PodGroup; will retry", "podGroup", g.Key.String())
		w.src.RetryGroupStatus(g.Key)
	}
}
