package workloads_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// annotatedJob is an Indexed Job of n pods asking cpu each that asks for a
// gang of min by annotation, with no PodGroup written.
func annotatedJob(ns, name string, n int32, min, cpu string) *batchv1.Job {
	j := indexedJob(ns, name, n, cpu)
	j.Spec.Template.Labels = nil
	j.Spec.Template.Annotations = map[string]string{qapi.GangMinMemberAnnotation: min}
	return j
}

func jobSelector(name string) string { return batchv1.JobNameLabel + "=" + name }

// waitPodGroup waits for PodGroup ns/name to exist and returns it.
func waitPodGroup(t *testing.T, env *harness.Env, ns, name string) *v1alpha1.PodGroup {
	t.Helper()
	var pg *v1alpha1.PodGroup
	harness.WaitFor(t, timeout, func() (bool, error) {
		got, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		pg = got
		return err == nil, err
	}, "PodGroup "+ns+"/"+name+" to be created")
	return pg
}

func podGroupNames(t *testing.T, env *harness.Env, ns string) []string {
	t.Helper()
	l, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pg := range l.Items {
		out = append(out, pg.Name)
	}
	slices.Sort(out)
	return out
}

func jobPods(t *testing.T, env *harness.Env, ns, job string) []v1.Pod {
	t.Helper()
	l, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: jobSelector(job)})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// TestAnnotatedJobGang: a Job that asks for a gang by annotation gets its
// PodGroup from Caldera (owned by the Job, labelled managed); the gang is
// held whole while it cannot fit and binds whole once it can; a scheduler
// restart creates no second PodGroup; finished members are counted, so
// the PodGroup goes Finished; deleting the Job deletes the PodGroup.
func TestAnnotatedJobGang(t *testing.T) {
	env := harness.StartWith(t, harness.WithControllers())
	env.AddNodes(t, 2, "4", "8Gi")
	s := env.StartScheduler(t)
	ns := env.Namespace(t)
	ctx := t.Context()

	job, err := env.Client.BatchV1().Jobs(ns).Create(ctx, annotatedJob(ns, "train", 3, "3", "3"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg := waitPodGroup(t, env, ns, "job-train")
	if len(pg.OwnerReferences) != 1 {
		t.Fatalf("owner references %+v, want the Job", pg.OwnerReferences)
	}
	o := pg.OwnerReferences[0]
	if o.Kind != "Job" || o.Name != "train" || o.UID != job.UID || (o.Controller != nil && *o.Controller) || o.BlockOwnerDeletion != nil {
		t.Errorf("owner %+v, want Job train %s, not as controller", o, job.UID)
	}
	if pg.Labels[qapi.ManagedByLabel] != qapi.ManagedByCaldera || pg.Spec.MinMember != 3 {
		t.Errorf("PodGroup labels %v, minMember %d; want managed-by caldera, 3", pg.Labels, pg.Spec.MinMember)
	}
	// 3 cpu each on two 4-cpu nodes: none binds (a negative check).
	harness.WaitFor(t, timeout, func() (bool, error) {
		held := 0
		for _, p := range jobPods(t, env, ns, "train") {
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
					held++
				}
			}
		}
		return held == 3, nil
	}, "the 3 members to be told why they wait")
	env.ConsistentlyBoundCount(t, ns, 0, 2*time.Second)
	env.AddNodes(t, 1, "4", "8Gi")
	env.WaitBoundCount(t, ns, jobSelector("train"), 3, timeout)

	// A restart: the new scheduler creates the PodGroup of a new Job, and
	// not the first one again.
	s.Stop()
	env.StartScheduler(t)
	if _, err := env.Client.BatchV1().Jobs(ns).Create(ctx, annotatedJob(ns, "second", 1, "1", "500m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGroup(t, env, ns, "job-second")
	again := waitPodGroup(t, env, ns, "job-train")
	if again.UID != pg.UID {
		t.Errorf("PodGroup job-train was created again after the restart (uid %s, was %s)", again.UID, pg.UID)
	}
	if got := podGroupNames(t, env, ns); !slices.Equal(got, []string{"job-second", "job-train"}) {
		t.Errorf("PodGroups %v, want job-second and job-train", got)
	}

	pods := jobPods(t, env, ns, "train")
	for i := range pods {
		succeed(t, env, &pods[i])
	}
	done := env.WaitPodGroupPhase(t, ns, "job-train", v1alpha1.PodGroupFinished, timeout)
	if done.Status.Succeeded != 3 {
		t.Errorf("PodGroup succeeded %d, want 3", done.Status.Succeeded)
	}

	bg := metav1.DeletePropagationBackground
	if err := env.Client.BatchV1().Jobs(ns).Delete(ctx, "train", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, timeout, func() (bool, error) {
		_, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "job-train", metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	}, "the garbage collector to delete the created PodGroup")
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// TestAnnotatedJobWithHandWrittenPodGroup: the pod-group label wins over
// the annotation, and a Job whose annotation is not a number gets no gang:
// its pods bind on their own and are told why, once each.
func TestAnnotatedJobWithHandWrittenPodGroup(t *testing.T) {
	env := harness.StartWith(t, harness.WithControllers())
	env.AddNodes(t, 2, "4", "8Gi")
	env.StartScheduler(t)
	ns := env.Namespace(t)
	ctx := t.Context()

	env.CreatePodGroup(t, harness.PodGroup(ns, "mine", 2))
	labelled := annotatedJob(ns, "labelled", 2, "2", "1")
	labelled.Spec.Template.Labels = map[string]string{v1alpha1.PodGroupLabel: "mine"}
	bad := annotatedJob(ns, "bad", 2, "two", "1")
	for _, j := range []*batchv1.Job{labelled, bad} {
		if _, err := env.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitBoundCount(t, ns, jobSelector("labelled"), 2, timeout)
	env.WaitBoundCount(t, ns, jobSelector("bad"), 2, timeout)
	env.WaitPodGroupPhase(t, ns, "mine", v1alpha1.PodGroupScheduling, timeout)
	for _, p := range jobPods(t, env, ns, "bad") {
		env.WaitEvent(t, ns, p.Name, "InvalidGang", timeout)
	}
	if got := podGroupNames(t, env, ns); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("PodGroups %v, want only the hand-written one", got)
	}
}

// TestAnnotatedJobRetried: a gang by annotation whose members fail is
// retried by the Job controller, and the replacements form the gang again
// under the same PodGroup.
func TestAnnotatedJobRetried(t *testing.T) {
	env := harness.StartWith(t, harness.WithControllers())
	env.AddNodes(t, 2, "4", "8Gi")
	env.StartScheduler(t)
	ns := env.Namespace(t)
	ctx := t.Context()

	j := annotatedJob(ns, "retry", 2, "2", "3")
	j.Spec.BackoffLimit = ptr.To[int32](2)
	if _, err := env.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg := waitPodGroup(t, env, ns, "job-retry")
	env.WaitBoundCount(t, ns, jobSelector("retry"), 2, timeout)
	first := map[types.UID]bool{}
	for _, p := range jobPods(t, env, ns, "retry") {
		first[p.UID] = true
		env.SetPodPhase(t, ns, p.Name, v1.PodFailed)
	}
	// The Job controller replaces them after its backoff (10 s, then 20 s).
	harness.WaitFor(t, 2*timeout, func() (bool, error) {
		n := 0
		for _, p := range jobPods(t, env, ns, "retry") {
			if !first[p.UID] && p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 2, nil
	}, "2 replacements to bind")
	again := waitPodGroup(t, env, ns, "job-retry")
	if again.UID != pg.UID {
		t.Errorf("the PodGroup was replaced (uid %s, was %s)", again.UID, pg.UID)
	}
}

// TestAnnotatedJobRecreated: a Job deleted and created again under its
// name (kubectl replace --force) while its old pods still terminate. The
// garbage collector deletes the PodGroup owned by the old Job; the one
// Caldera creates again is owned by the new Job and stays, and the new
// pods bind. Owned by the deleted Job, it was deleted again by the
// collector about once a second for the life of the new Job.
func TestAnnotatedJobRecreated(t *testing.T) {
	env := harness.StartWith(t, harness.WithControllers())
	env.AddNodes(t, 2, "4", "8Gi")
	env.StartScheduler(t)
	ns := env.Namespace(t)
	ctx := t.Context()

	if _, err := env.Client.BatchV1().Jobs(ns).Create(ctx, annotatedJob(ns, "again", 2, "2", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitPodGroup(t, env, ns, "job-again")
	env.WaitBoundCount(t, ns, jobSelector("again"), 2, timeout)

	bg := metav1.DeletePropagationBackground
	if err := env.Client.BatchV1().Jobs(ns).Delete(ctx, "again", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	job, err := env.Client.BatchV1().Jobs(ns).Create(ctx, annotatedJob(ns, "again", 2, "2", "1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pg *v1alpha1.PodGroup
	harness.WaitFor(t, timeout, func() (bool, error) {
		got, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "job-again", metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		pg = got
		return got.UID != first.UID && len(got.OwnerReferences) == 1 && got.OwnerReferences[0].UID == job.UID, nil
	}, "a PodGroup job-again owned by the new Job")
	harness.WaitFor(t, timeout, func() (bool, error) {
		bound := 0
		for _, p := range jobPods(t, env, ns, "again") {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && metav1.IsControlledBy(&p, job) {
				bound++
			}
		}
		return bound == 2, nil
	}, "the new Job's 2 pods bound")
	// The collector has nothing to delete: the PodGroup stays the same
	// object while the new Job lives.
	// The reads use the test's context, not the window's: a read the
	// client's rate limiter would delay past the window's end must not
	// fail the test.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
		got, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "job-again", metav1.GetOptions{})
		if err != nil || got.UID != pg.UID {
			return false, fmt.Errorf("PodGroup job-again is no longer the object owned by the new Job: %v", err)
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}
}
