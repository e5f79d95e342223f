package annotation

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// ToCreate is a PodGroup the scheduler is to create for a gang asked for
// by annotation, copied out of the Book.
type ToCreate struct {
	Key types.NamespacedName
	// Owner is the members' controller; the PodGroup is deleted with it.
	Owner     metav1.OwnerReference
	MinMember int32
	// ScheduleTimeoutSeconds is nil when the members ask for none.
	ScheduleTimeoutSeconds *int32
	// Queue is the members' queue label, "" without one.
	Queue string
}

// NewPodGroup is the PodGroup created for c: owned by the members'
// controller but not as its controller (the controller owns its pods, not
// this), and without blockOwnerDeletion, which would need the right to
// update the owner's finalizers and matters only for foreground deletion.
func NewPodGroup(c ToCreate) *v1alpha1.PodGroup {
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

// Create creates c's PodGroup. It is idempotent: every replica derives the
// same name, so AlreadyExists (another leader, or an informer not caught
// up) is success, and so is a terminating namespace (its pods are going
// too; nothing to schedule). created says whether this call made it.
func Create(ctx context.Context, client pgclient.Interface, c ToCreate) (created bool, err error) {
	_, err = client.SchedulingV1alpha1().PodGroups(c.Key.Namespace).Create(ctx, NewPodGroup(c), metav1.CreateOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return false, nil
	}
	return false, err
}
