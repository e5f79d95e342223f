package status

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// Reasons of the Warning Events about pods that ask for a gang by
// annotation (docs/gangs.md).
const (
	// ReasonInvalidGang: the pod's gang-min-member is not a positive
	// integer, or the pod has no controller; it is scheduled on its own.
	ReasonInvalidGang = "InvalidGang"
	// ReasonGangAnnotationMismatch: the pod's gang annotations disagree
	// with its gang's first member's, or its timeout is not a positive
	// integer; the gang follows the first member and ignores the timeout.
	ReasonGangAnnotationMismatch = "GangAnnotationMismatch"
)

// PodGroupToCreate is a PodGroup the scheduler is to create for a gang
// asked for by annotation, copied out of the state.
type PodGroupToCreate struct {
	Key types.NamespacedName
	// Owner is the members' controller; the PodGroup is deleted with it.
	Owner     metav1.OwnerReference
	MinMember int32
	// ScheduleTimeoutSeconds is nil when the members ask for none.
	ScheduleTimeoutSeconds *int32
	// Queue is the members' queue label, "" without one.
	Queue string
}

// PodNotice is a Warning Event to post about one pod, once.
type PodNotice struct {
	Pod             *v1.Pod
	Reason, Message string
}

// NewImplicitPodGroup is the PodGroup created for c: owned by the members'
// controller but not as its controller (the controller owns its pods, not
// this), and without blockOwnerDeletion, which would need the right to
// update the owner's finalizers and matters only for foreground deletion.
func NewImplicitPodGroup(c PodGroupToCreate) *v1alpha1.PodGroup {
	owner := c.Owner
	no := false
	owner.Controller, owner.BlockOwnerDeletion = &no, nil
	labels := map[string]string{qapi.ManagedByLabel: qapi.ManagedByCaldera}
	if c.Queue != "" {
		labels[qapi.QueueLabel] = c.Queue
	}
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:            c.Key.Name,
			Namespace:       c.Key.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: v1alpha1.PodGroupSpec{MinMember: c.MinMember, ScheduleTimeoutSeconds: c.ScheduleTimeoutSeconds},
	}
}

// CreatePodGroups creates the PodGroups of gangs asked for by annotation
// that have none. It is idempotent: every replica derives the same name, so
// AlreadyExists (another leader, or an informer not caught up) is success.
// A failure is not handed back: the source hands the gang out again a few
// seconds later while its PodGroup is still missing.
func (w *Writer) CreatePodGroups(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for _, c := range w.src.PodGroupsToCreate() {
		pg := NewImplicitPodGroup(c)
		_, err := w.cl.PodGroups.SchedulingV1alpha1().PodGroups(c.Key.Namespace).Create(ctx, pg, metav1.CreateOptions{})
		switch {
		case err == nil:
			logger.V(2).Info("Created PodGroup for a gang asked for by annotation", "podGroup", c.Key.String(), "minMember", c.MinMember)
		case apierrors.IsAlreadyExists(err):
		case apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
			// Its pods are going too; nothing to schedule.
		default:
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
