package podslim

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// Finished members of Volcano's and upstream's gangs are listed by an
// informer of their own (pkg/feed), since one cannot select on an
// annotation or on spec.schedulingGroup: it keeps the pods that join a
// group (JoinsByName) slimmed, and cuts the rest to their identity. Job
// pods are left to the finished Job pods informer (JobPod keeps theirs
// too), so that no pod arrives twice.

// JoinedPod slims a finished pod as Pod does, keeping the Volcano
// group-name annotation that makes it a member, and its task (Pod keeps
// spec.schedulingGroup); a pod that joins no group keeps only its
// identity, since the informer holds every finished pod. Idempotent.
func JoinedPod(obj any) (any, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return Pod(obj)
	}
	if !gangbook.JoinsByName(pod) {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, Labels: pod.Labels}}, nil
	}
	out, err := Pod(pod)
	if err != nil {
		return nil, err
	}
	if name, ok := volcano.GroupName(pod); ok {
		slim := out.(*v1.Pod)
		slim.Annotations = map[string]string{volcano.GroupNameAnnotation: name}
		if task := volcano.TaskName(pod); task != "" {
			// A succeeded member counts towards its task's minimum.
			slim.Annotations[volcano.TaskSpecKey] = task
		}
	}
	return out, nil
}
