package status

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
)

// PodNotice is a Warning Event to post about one pod, once.
type PodNotice struct {
	Pod             *v1.Pod
	Reason, Message string
}

// CreatePodGroups creates the PodGroups of gangs asked for by annotation
// that have none (annotation.Create). A failure is not handed back: the
// source hands the gang out again a few seconds later while its PodGroup
// is still missing.
func (w *Writer) CreatePodGroups(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for _, c := range w.src.PodGroupsToCreate() {
		created, err := annotation.Create(ctx, w.cl.PodGroups, c)
		switch {
		case created:
			logger.V(2).Info("Created PodGroup for a gang asked for by annotation", "podGroup", c.Key.String(), "minMember", c.MinMember)
		case err != nil:
			writeErrors.WithLabelValues(WriteCreatePodGroup).Inc()
			logger.Error(err, "Cannot create PodGroup for a gang asked for by annotation; will retry", "podGroup", c.Key.String())
		}
	}
}

// PostPodNotices posts the Warning Events the source queued about pods.
func (w *Writer) PostPodNotices() {
	for _, n := range w.src.PodNotices() {
		w.src.Recorder(n.Pod.Spec.SchedulerName).Eventf(n.Pod, nil, v1.EventTypeWarning, n.Reason, "Scheduling", "%s", n.Message)
	}
}
