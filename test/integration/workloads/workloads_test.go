// Package workloads_test runs real workload controllers
// (kube-controller-manager in-process) against Caldera: the pods a gang is
// made of come from a Job controller, not from the test.
package workloads_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 60 * time.Second

// TestJobGang: an Indexed Job whose pod template joins a PodGroup is made
// into pods by the real Job controller, placed by Caldera as one gang,
// completed (the test plays the kubelet's part: it sets the pods
// Succeeded), and the Job reaches Complete; deleting the Job lets the
// garbage collector remove its pods.
func TestJobGang(t *testing.T) {
	env := harness.StartWith(t, harness.WithControllers())
	env.AddNodes(t, 3, "4", "8Gi")
	env.StartScheduler(t)
	ns := env.Namespace(t)
	ctx := t.Context()

	if _, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Create(ctx, harness.PodGroup(ns, "train", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := indexedJob(ns, "train", 3, "3")
	if _, err := env.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sel := v1alpha1.PodGroupLabel + "=train"
	// 3 cpu each on 4-cpu nodes: one per node, all three or none.
	env.WaitBoundCount(t, ns, sel, 3, timeout)

	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if len(p.OwnerReferences) == 0 || p.OwnerReferences[0].Kind != "Job" {
			t.Errorf("pod %s is not owned by the Job: %v", p.Name, p.OwnerReferences)
		}
		nodes[p.Spec.NodeName] = true
		succeed(t, env, p)
	}
	if len(nodes) != 3 {
		t.Errorf("the gang's pods share nodes: %v", nodes)
	}
	harness.WaitFor(t, timeout, func() (bool, error) {
		j, err := env.Client.BatchV1().Jobs(ns).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == v1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}, "the Job to be Complete")

	bg := metav1.DeletePropagationBackground
	if err := env.Client.BatchV1().Jobs(ns).Delete(ctx, "train", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, timeout, func() (bool, error) {
		l, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		return len(l.Items) == 0, nil
	}, "the garbage collector to delete the Job's pods")
}

// indexedJob is an Indexed Job of n pods asking cpu each, in PodGroup pg,
// scheduled by Caldera.
func indexedJob(ns, pg string, n int32, cpu string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pg},
		Spec: batchv1.JobSpec{
			Parallelism:    ptr.To(n),
			Completions:    ptr.To(n),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			BackoffLimit:   ptr.To[int32](0),
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.PodGroupLabel: pg}},
				Spec: v1.PodSpec{
					SchedulerName:                 harness.DefaultSchedulerName,
					RestartPolicy:                 v1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []v1.Container{{
						Name:  "worker",
						Image: harness.PauseImage,
						Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
							v1.ResourceCPU: resource.MustParse(cpu),
						}},
					}},
				},
			},
		},
	}
}

// succeed sets a bound pod Succeeded, as its kubelet would when its
// container exits 0.
func succeed(t *testing.T, env *harness.Env, p *v1.Pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	pods := env.Client.CoreV1().Pods(p.Namespace)
	// The scheduler writes bound gang members too (the annotations that
	// keep autoscalers from scaling their node down), so the copy in hand
	// may be stale: read the pod again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Phase = v1.PodSucceeded
		cur.Status.ContainerStatuses = []v1.ContainerStatus{{
			Name: "worker", Image: harness.PauseImage, ImageID: harness.PauseImage,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
		}}
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(fmt.Errorf("setting %s Succeeded: %w", p.Name, err))
	}
}
