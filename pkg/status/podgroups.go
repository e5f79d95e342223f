package status

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert/upstream"
	"github.com/caldera-sched/caldera/pkg/convert/volcano"
)

// WriteGroups posts each group's notice and writes the status of those
// whose PodGroup's differs from what it should be. A failed write hands
// the group back to the source, so the next pass tries again.
func (w *Writer) WriteGroups(ctx context.Context, work []Group) {
	logger := klog.FromContext(ctx)
	for _, g := range work {
		w.emit(g)
		w.tellMembers(ctx, g)
		if g.Volcano != nil {
			w.writeVolcanoGroup(ctx, g)
			continue
		}
		if g.Upstream != nil {
			w.writeUpstreamGroup(ctx, g)
			continue
		}
		if g.PodGroup == nil {
			continue
		}
		w.writeVerdict(ctx, g)
		if equality.Semantic.DeepEqual(g.PodGroup.Status, g.Status) {
			continue
		}
		if err := w.writeStatus(ctx, g); err != nil && !apierrors.IsNotFound(err) {
			writeErrors.WithLabelValues(WritePodGroupStatus).Inc()
			logger.Error(err, "Cannot write PodGroup status; will retry", "podGroup", g.Key.String())
			w.src.RetryGroupStatus(g.Key)
		}
	}
}

func (w *Writer) writeStatus(ctx context.Context, g Group) error {
	client := w.cl.PodGroups.SchedulingV1alpha1().PodGroups(g.Key.Namespace)
	pg := g.PodGroup.DeepCopy()
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			latest, err := client.Get(ctx, g.Key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pg = latest
		}
		first = false
		// Only the status we own changes; a ScheduleStartTime someone else set stays.
		status := g.Status
		if !pg.Status.ScheduleStartTime.IsZero() {
			status.ScheduleStartTime = pg.Status.ScheduleStartTime
		}
		status.OccupiedBy = pg.Status.OccupiedBy
		pg.Status = status
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
	if g.PodGroup != nil {
		w.src.Recorder(g.Profile).Eventf(PodGroupRef(g.PodGroup), nil, typ, g.Notice.Reason, "Scheduling", "%s", g.Notice.Message)
		return
	}
	for _, p := range g.Pods {
		w.src.Recorder(p.Spec.SchedulerName).Eventf(p, nil, typ, g.Notice.Reason, "Scheduling", "%s", g.Notice.Message)
	}
}

// PodGroupRef is the Event target for a PodGroup. The scheduler's event scheme
// does not know PodGroups, so the reference is spelled out.
func PodGroupRef(pg *v1alpha1.PodGroup) *v1.ObjectReference {
	apiVersion := v1alpha1.SchemeGroupVersion.String()
	if volcano.IsVolcano(pg) || upstream.IsUpstream(pg) {
		apiVersion = pg.APIVersion
	}
	return &v1.ObjectReference{
		APIVersion:      apiVersion,
		Kind:            "PodGroup",
		Namespace:       pg.Namespace,
		Name:            pg.Name,
		UID:             pg.UID,
		ResourceVersion: pg.ResourceVersion,
	}
}

// writeVerdict puts the later-stage verdict (Group.Verdict) in the
// PodGroup's verdict annotation, or takes it out, when it differs from
// what the PodGroup says.
func (w *Writer) writeVerdict(ctx context.Context, g Group) {
	if g.Verdict == nil {
		return
	}
	have, ok := g.PodGroup.Annotations[qapi.VerdictAnnotation]
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
	if err := w.patchPodGroup(ctx, g.PodGroup, patch); err != nil && !apierrors.IsNotFound(err) {
		writeErrors.WithLabelValues(WritePodGroupAnnotation).Inc()
		klog.FromContext(ctx).Error(err, "Cannot record the verdict on PodGroup; will retry", "podGroup", g.Key.String())
		w.src.RetryGroupStatus(g.Key)
	}
}
