package admission

import (
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// LimitOfPod is pod's run-time limit (runlimit.OfJob): its own, its
// PodGroup's (group: the PodGroup's annotations, nil without one) and its
// Job's deadline, the smallest. O(1).
func (a *State) LimitOfPod(pod *v1.Pod, group map[string]string) (runlimit.Limit, error) {
	if pod != nil && len(a.JobDeadlines) > 0 {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" && ref.APIVersion == batchv1.SchemeGroupVersion.String() {
			if d, ok := a.JobDeadlines[ref.UID]; ok {
				return runlimit.OfJob(pod, group, &d)
			}
		}
	}
	return runlimit.Of(pod, group)
}

// SlimJob is an informer transform for the Job informer that feeds
// ApplyJob: it keeps the identity and the deadline, nothing else.
func SlimJob(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, UID: job.UID, ResourceVersion: job.ResourceVersion},
		Spec:       batchv1.JobSpec{ActiveDeadlineSeconds: job.Spec.ActiveDeadlineSeconds},
	}, nil
}
