package cache

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/runlimit"
)

func mkJob(name string, deadline *int64) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       batchv1.JobSpec{ActiveDeadlineSeconds: deadline},
	}
}

// A Job's activeDeadlineSeconds is its pods' limit, though they do not
// carry it: a pod of a Job of 59 s (with its 30 s grace, and bound in
// the second after the pass at t0+10, it ends by t0+100) backfills around
// the reservation at t0+100, one of a Job of 600 s, or of a Job without a deadline, waits;
// a deadline taken back (ApplyJob without one, DeleteJob) is no limit.
func TestJobDeadlineBackfills(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline *int64
		forget   func(c *Cache, j *batchv1.Job)
		admit    bool
	}{
		{name: "deadline 59 s", deadline: ptr.To[int64](59), admit: true},
		{name: "deadline 600 s", deadline: ptr.To[int64](600)},
		{name: "no deadline"},
		{name: "deadline removed", deadline: ptr.To[int64](60), forget: func(c *Cache, j *batchv1.Job) {
			c.ApplyJob(mkJob(j.Name, nil))
		}},
		{name: "Job deleted", deadline: ptr.To[int64](60), forget: func(c *Cache, j *batchv1.Job) { c.DeleteJob(j) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := reservationsFixture(t, singletons)
			job := mkJob("work", tc.deadline)
			c.ApplyJob(job)
			if tc.forget != nil {
				tc.forget(c, job)
			}
			p := single("ns", "work-0", cpu("4"), ownedBy("Job", job.Name), createdAt(t0.Add(time.Second)))
			podEvent(c, p)
			pass(c, t0.Add(10*time.Second)) // the reservation starts at t0+100
			if ok, msg := c.Admitted(p); ok != tc.admit {
				t.Errorf("Admitted = %v %q, want %v", ok, msg, tc.admit)
			}
		})
	}
}

// A bound pod of a Job with a deadline gives its room back by its start +
// the deadline + its grace: the gang behind it is reserved from then.
func TestJobDeadlineEndsBoundPod(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n0", "4"))
	job := mkJob("run", ptr.To[int64](50))
	c.ApplyJob(job)
	podEvent(c, single("ns", "run-0", cpu("4"), boundTo("n0"), ownedBy("Job", job.Name), runningSince(t0), func(p *v1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	}))
	addPG(c, mkPG("ns", "next", 1))
	podEvent(c, memberOf("ns", "next-0", "next", cpu("4")))
	pass(c, t0.Add(10*time.Second))
	res := c.feasible.Timed
	if len(res) != 1 {
		t.Fatalf("reservations %+v, want one for next", res)
	}
	if got := res[0].Start - t0.Unix(); got != 55 {
		t.Errorf("next reserved from t0%+d, want t0+55 (the Job's 50 s deadline + 5 s grace)", got)
	}
}

// An annotation that cannot be read is ignored and the pod is told, once,
// in an InvalidRunLimit Event that names the value and what to write.
func TestInvalidRunLimitNotice(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n0", "4"))
	bad := single("ns", "bad", cpu("1"), annotated(runlimit.Annotation, "2h"))
	podEvent(c, bad)
	podEvent(c, bad) // told once
	podEvent(c, single("ns", "good", cpu("1"), limit(60)))
	n := c.PodNotices()
	if len(n) != 1 || n[0].Pod.Name != "bad" || n[0].Reason != runlimit.EventReason ||
		!strings.Contains(n[0].Message, `"2h"`) || !strings.Contains(n[0].Message, `write "7200"`) {
		t.Fatalf("notices %+v, want one InvalidRunLimit for bad suggesting 7200", n)
	}
}
