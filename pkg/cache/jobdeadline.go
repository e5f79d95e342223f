package cache

import (
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
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
	if !a.On() {
		return
	}
	d := job.Spec.ActiveDeadlineSeconds
	if d == nil || *d <= 0 {
		delete(a.JobDeadlines, job.UID)
		return
	}
	if a.JobDeadlines == nil {
		a.JobDeadlines = map[types.UID]int64{}
	}
	a.JobDeadlines[job.UID] = *d
}

// DeleteJob forgets job's deadline. O(1).
func (c *Cache) DeleteJob(job *batchv1.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.adm.On() {
		delete(c.adm.JobDeadlines, job.UID)
	}
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
