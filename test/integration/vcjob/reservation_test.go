package vcjob_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// limitedJob declares a run-time limit on vcjob j, the way a Volcano user
// can: an annotation on the job, which Volcano's controller copies onto
// the PodGroup it makes (the job's pods do not exist while it waits).
func limitedJob(j *batch.Job, seconds string) *batch.Job {
	j.Annotations = map[string]string{runlimit.Annotation: seconds}
	return j
}

// reservedJobStarts: Volcano's controller creates no pod before its
// PodGroup is Inqueue, so a waiting vcjob's limit and size are its
// PodGroup's. A gang job behind a job that declares a 20 s limit is
// reserved at that job's end (its PodGroup says when); a job whose limit
// ends first runs now in the reserved room; one without a limit waits and
// says why; and the gang job starts when the job ahead of it ends.
func (w world) reservedJobStarts(t *testing.T) {
	ns := w.env.Namespace(t)
	w.env.AddNodes(t, 3, "4", "8Gi")
	q := "rs-" + ns
	w.createQueue(t, q, 1, nil)
	one := func(name, limit string) *batch.Job {
		j := job(ns, name, q, 0, task{name: "w", replicas: 1, min: 1, cpu: "4"})
		if limit != "" {
			limitedJob(j, limit)
		}
		return j
	}
	r0 := one("r0", "20")
	for _, j := range []*batch.Job{r0, one("r1", "600")} {
		w.createJob(t, j)
		w.env.WaitBound(t, ns, timeout, podNames(j)...)
		w.finish(t, ns, v1.PodRunning, podNames(j)...)
	}
	r0Pod, err := w.env.Client.CoreV1().Pods(ns).Get(t.Context(), podNames(r0)[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r0End := r0Pod.Status.StartTime.Truncate(time.Second).Add(20 * time.Second)

	train := limitedJob(job(ns, "train", q, 0, task{name: "w", replicas: 2, min: 2, cpu: "4"}), "60")
	w.createJob(t, train)
	pg := w.waitPodGroup(t, ns, train.Name, "an expected start", func(pg *vc.PodGroup) bool {
		return pg.Annotations[qapi.ExpectedStartAnnotation] != ""
	})
	eta, err := time.Parse(time.RFC3339, pg.Annotations[qapi.ExpectedStartAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	if d := eta.Sub(r0End); d.Abs() > time.Second {
		t.Errorf("train's expected start %v, want r0's end %v", eta, r0End)
	}

	quick := one("quick", "5")
	w.createJob(t, quick)
	w.env.WaitBound(t, ns, timeout, podNames(quick)...)
	w.finish(t, ns, v1.PodSucceeded, podNames(quick)...)

	endless := one("endless", "")
	w.createJob(t, endless)
	w.waitPodGroup(t, ns, endless.Name, "Pending, told it would delay train's reservation", func(pg *vc.PodGroup) bool {
		return pg.Status.Phase == vc.PodGroupPending && hasTrue(pg, vc.PodGroupUnschedulableType, "delay the reservation")
	})
	if p := w.podGroupOf(t, ns, train.Name); p.Status.Phase != vc.PodGroupPending {
		t.Errorf("train's PodGroup %s before its reservation, want Pending", p.Status.Phase)
	}

	// r0 ends at its limit, as its kubelet would end it: train starts then.
	harness.WaitFor(t, time.Until(eta)+5*time.Second, func() (bool, error) { return !time.Now().Before(eta), nil }, "train's expected start")
	w.finish(t, ns, v1.PodSucceeded, podNames(r0)...)
	w.env.WaitBound(t, ns, timeout, podNames(train)...)
	if late := time.Since(eta); late > 10*time.Second {
		t.Errorf("train started %v after its expected start", late)
	}
	w.waitJob(t, ns, endless.Name, "still Pending: train's nodes are full", jobPhase(batch.Pending))
}
