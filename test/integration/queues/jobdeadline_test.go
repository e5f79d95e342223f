package queues_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestJobDeadlineBackfills: the real Job controller makes the pods of two
// Jobs whose only limit is the Job's activeDeadlineSeconds (their pods do
// not carry it). The Job of 10 s ends before the gang's reservation and
// runs now in its room; the one of 600 s would delay it and waits, told
// why. A pod whose limit annotation cannot be read is told so.
func TestJobDeadlineBackfills(t *testing.T) {
	env := harness.StartWith(t, harness.WithControllers())
	ns := env.Namespace(t)
	nodes := env.AddNodes(t, 3, "4", "16Gi")
	env.StartScheduler(t)

	// n0 runs a job for a minute, n1 one for ten; n2 is empty. The gang
	// of two 4-cpu members is reserved on n0 and n2 from n0's end.
	for i, seconds := range []int{60, 600} {
		p := limited(harness.Pod(ns, []string{"r0", "r1"}[i]).CPU("4").Obj(), seconds)
		p.Spec.NodeName = nodes[i].Name
		env.CreatePod(t, p)
		env.SetPodPhase(t, ns, p.Name, v1.PodRunning)
	}
	env.CreatePodGroup(t, harness.PodGroup(ns, "train", 2))
	env.CreatePods(t, harness.Members(ns, "train", 2, "4")...)
	waitExpectedStart(t, env, ns, "train")

	long := deadlineJob(t, env, ns, "long", 600)
	ev := env.WaitEvent(t, ns, long, "NotAdmitted", timeout)
	if !strings.Contains(ev.Note, "delay the reservation of pg:"+ns+"/train") {
		t.Errorf("the 600 s Job's pod: NotAdmitted %q, want the reservation it would delay", ev.Note)
	}
	short := deadlineJob(t, env, ns, "short", 10)
	if got := env.WaitBound(t, ns, timeout, short)[short]; got != nodes[2].Name {
		t.Errorf("the 10 s Job's pod bound to %s, want %s (the reserved room it leaves by then)", got, nodes[2].Name)
	}
	env.ConsistentlyUnbound(t, ns, quiet, long, "train-0", "train-1")

	bad := harness.Pod(ns, "bad").CPU("1").Obj()
	bad.Annotations = map[string]string{runlimit.Annotation: "2h"}
	env.CreatePod(t, bad)
	ev = env.WaitEvent(t, ns, "bad", runlimit.EventReason, timeout)
	if !strings.Contains(ev.Note, `write "7200"`) {
		t.Errorf("InvalidRunLimit %q, want the number to write instead", ev.Note)
	}
}

// deadlineJob creates a Job of one 4-cpu pod with activeDeadlineSeconds
// and returns its pod's name once the Job controller has made it.
func deadlineJob(t *testing.T, env *harness.Env, ns, name string, deadline int64) string {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			ActiveDeadlineSeconds: ptr.To(deadline),
			BackoffLimit:          ptr.To[int32](0),
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
				SchedulerName:                 harness.DefaultSchedulerName,
				RestartPolicy:                 v1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []v1.Container{{Name: "work", Image: harness.PauseImage, Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")},
				}}},
			}},
		},
	}
	if _, err := env.Client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod string
	harness.WaitFor(t, timeout, func() (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod = pods.Items[0].Name
		return true, nil
	}, "the pod of Job "+name)
	return pod
}
