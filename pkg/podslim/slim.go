// Package podslim holds the transforms of the informers pkg/feed builds for
// finished pods: each keeps of a pod only what the cache reads, so that an
// informer holding every finished member costs little memory. The feed and
// the test feeder (pkg/cache/cachetest) use them; they import nothing of
// the cache.
package podslim

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// Pod is the transform of the finished-member informer: it keeps only
// what the cache reads (identity, labels, times, scheduling fields, and every
// field resourcehelper.PodRequests reads), so that finished members, which a
// Job may keep for days, cost a few hundred bytes each instead of the whole
// pod (env, volumes, probes, annotations and managed fields often outweigh the
// rest many times). It is idempotent, as client-go asks: a slim pod slims to
// itself.
func Pod(obj any) (any, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		if a, err := meta.Accessor(obj); err == nil {
			a.SetManagedFields(nil)
		}
		return obj, nil
	}
	out := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:                       pod.Name,
			Namespace:                  pod.Namespace,
			UID:                        pod.UID,
			ResourceVersion:            pod.ResourceVersion,
			Generation:                 pod.Generation,
			CreationTimestamp:          pod.CreationTimestamp,
			DeletionTimestamp:          pod.DeletionTimestamp,
			DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
			Labels:                     pod.Labels,
			Annotations:                gangAnnotations(pod.Annotations),
			OwnerReferences:            pod.OwnerReferences,
		},
		Spec: v1.PodSpec{
			Containers:        slimContainers(pod.Spec.Containers),
			InitContainers:    slimContainers(pod.Spec.InitContainers),
			Overhead:          pod.Spec.Overhead,
			Resources:         pod.Spec.Resources,
			NodeName:          pod.Spec.NodeName,
			SchedulerName:     pod.Spec.SchedulerName,
			Priority:          pod.Spec.Priority,
			PriorityClassName: pod.Spec.PriorityClassName,
			PreemptionPolicy:  pod.Spec.PreemptionPolicy,
			SchedulingGroup:   pod.Spec.SchedulingGroup,
		},
		Status: v1.PodStatus{
			Phase:                                pod.Status.Phase,
			Conditions:                           pod.Status.Conditions,
			StartTime:                            pod.Status.StartTime,
			NominatedNodeName:                    pod.Status.NominatedNodeName,
			Resources:                            pod.Status.Resources,
			AllocatedResources:                   pod.Status.AllocatedResources,
			ContainerStatuses:                    slimStatuses(pod.Status.ContainerStatuses),
			InitContainerStatuses:                slimStatuses(pod.Status.InitContainerStatuses),
			NodeAllocatableResourceClaimStatuses: pod.Status.NodeAllocatableResourceClaimStatuses,
		},
	}
	return out, nil
}

// gangAnnotations keeps of a pod's annotations only those GroupKeyOf
// reads, so that a finished member by annotation stays in its gang; nil
// for most pods.
func gangAnnotations(a map[string]string) map[string]string {
	n, ok := a[qapi.GangMinMemberAnnotation]
	if !ok {
		return nil
	}
	out := map[string]string{qapi.GangMinMemberAnnotation: n}
	if t, ok := a[qapi.GangTimeoutSecondsAnnotation]; ok {
		out[qapi.GangTimeoutSecondsAnnotation] = t
	}
	return out
}

// JobPod is the transform of the finished Job pods informer, which
// delivers the finished members of gangs by annotation (an annotation
// cannot be selected on, so it lists every finished Job pod without the
// pod-group label): an annotated pod, or one that joins a Volcano or
// upstream PodGroup by name (the Job controller's pods with WorkloadWithJob
// do), is slimmed like a member, any other is cut to its identity, which is
// all a delete needs. Idempotent.
func JobPod(obj any) (any, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Annotations[qapi.GangMinMemberAnnotation] != "" {
		return Pod(obj)
	}
	if gangbook.JoinsByName(pod) {
		return JoinedPod(pod)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}}, nil
}

func slimContainers(cs []v1.Container) []v1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]v1.Container, len(cs))
	for i, c := range cs {
		out[i] = v1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}

func slimStatuses(ss []v1.ContainerStatus) []v1.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = v1.ContainerStatus{Name: s.Name, Resources: s.Resources, AllocatedResources: s.AllocatedResources}
	}
	return out
}
