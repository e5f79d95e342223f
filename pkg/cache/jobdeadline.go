package cache

import (
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// A Job's spec.activeDeadlineSeconds is a run-time limit of its pods: the
// Job controller fails the Job, and deletes its pods, that long after the
// Job started. The pods do not carry it, so the cache keeps the deadline
// of every Job that sets one, by UID, and a pod controlled by such a Job
// reads it through its controller reference. Only Jobs with a deadline are
// kept: a cluster of Jobs without one pays nothing per pod.

// ApplyJob records job's deadline (or forgets it when job sets none). A
// pod already bound reads a changed deadline at its next event; a pending
// one at the next admission pass. O(1).
func (c *Cache) ApplyJob(job *batchv1.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.adm
	if !a.on() {
		return
	}
	d := job.Spec.ActiveDeadlineSeconds
	if d == nil || *d <= 0 {
		delete(a.jobDeadlines, job.UID)
		return
	}
	if a.jobDeadlines == nil {
		a.jobDeadlines = map[types.UID]int64{}
	}
	a.jobDeadlines[job.UID] = *d
}

// DeleteJob forgets job's deadline. O(1).
func (c *Cache) DeleteJob(job *batchv1.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.adm.on() {
		delete(c.adm.jobDeadlines, job.UID)
	}
}

// limitOfPod is pod's run-time limit (runlimit.OfJob): its own, its
// PodGroup's (group: the PodGroup's annotations, nil without one) and its
// Job's deadline, the smallest. O(1).
func (a *admissionState) limitOfPod(pod *v1.Pod, group map[string]string) (runlimit.Limit, error) {
	if pod != nil && len(a.jobDeadlines) > 0 {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" && ref.APIVersion == batchv1.SchemeGroupVersion.String() {
			if d, ok := a.jobDeadlines[ref.UID]; ok {
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

// noteRunLimit tells pod, once (note), of each run-time limit annotation
// it or its PodGroup (group) carries that cannot be read: the limit is
// ignored, so the job is planned as unbounded, and its owner should know
// why it does not backfill. Pods without the annotation pay two map
// lookups. The caller holds the cache's lock. O(1).
func (b *podNotices) noteRunLimit(pod *v1.Pod, group map[string]string) {
	_, own := pod.Annotations[runlimit.Annotation]
	_, grp := group[runlimit.Annotation]
	if !own && !grp {
		return
	}
	_, err := runlimit.Of(pod, group)
	for _, ie := range runlimit.Invalid(err) {
		b.note(pod, annotation.Problem{Reason: runlimit.EventReason, Message: ie.Error()})
		return // one Event per pod: podNotices.note tells a pod once
	}
}
