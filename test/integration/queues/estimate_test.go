package queues_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestEstimatedStart: a gang that waits for pods without a run-time limit
// gets no reservation. Once five pods of its queue have run about 8 s and
// finished, the scheduler expects the pods the gang waits for to end
// about 8 s after they started, and writes that as the PodGroup's
// estimated start. When one of them ends then, the gang starts.
func TestEstimatedStart(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	nodes := env.AddNodes(t, 3, "4", "16Gi")
	env.StartScheduler(t)

	var learn []string
	for i := range 5 {
		name := "learn-" + string(rune('a'+i))
		p := harness.Pod(ns, name).CPU("100m").Obj()
		p.Spec.NodeName = nodes[2].Name
		env.CreatePod(t, p)
		env.SetPodPhase(t, ns, name, v1.PodRunning)
		learn = append(learn, name)
	}
	ran := time.Now()
	harness.WaitFor(t, timeout, func() (bool, error) { return time.Since(ran) >= 8*time.Second, nil }, "8 s of run time")
	for _, name := range learn {
		env.SetPodPhase(t, ns, name, v1.PodSucceeded)
	}

	// n0 and n1 run a 4-cpu pod without a limit; n2 is empty. The gang
	// of two 4-cpu members fits once either of them ends.
	for i, name := range []string{"r0", "r1"} {
		p := harness.Pod(ns, name).CPU("4").Obj()
		p.Spec.NodeName = nodes[i].Name
		env.CreatePod(t, p)
		env.SetPodPhase(t, ns, name, v1.PodRunning)
	}
	env.CreatePodGroup(t, harness.PodGroup(ns, "train", 2))
	env.CreatePods(t, harness.Members(ns, "train", 2, "4")...)
	var est time.Time
	harness.WaitFor(t, timeout, func() (bool, error) {
		pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), "train", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if _, ok := pg.Annotations[qapi.ExpectedStartAnnotation]; ok {
			t.Fatalf("train got a reservation (expected start %s), though nothing it waits for declares a limit", pg.Annotations[qapi.ExpectedStartAnnotation])
		}
		v, ok := pg.Annotations[qapi.EstimatedStartAnnotation]
		if !ok {
			return false, nil
		}
		est, err = time.Parse(time.RFC3339, v)
		return err == nil, err
	}, "the estimated start of train")
	r0 := getPod(t, env, ns, "r0")
	// 8 s as learned (run times are whole seconds, seen ending up to a
	// second late), from r0's start truncated to the second.
	if from := r0.Status.StartTime.Truncate(time.Second); est.Before(from.Add(7*time.Second)) || est.After(from.Add(11*time.Second)) {
		t.Errorf("estimated start %v, want about 8 s after r0 started (%v)", est, from)
	}
	env.ConsistentlyUnbound(t, ns, min(quiet, time.Until(est)-time.Second), "train-0", "train-1")

	harness.WaitFor(t, time.Until(est)+5*time.Second, func() (bool, error) { return !time.Now().Before(est), nil }, "the estimated start")
	env.SetPodPhase(t, ns, "r0", v1.PodSucceeded)
	env.WaitBound(t, ns, timeout, "train-0", "train-1")
	if late := time.Since(est); late > 10*time.Second {
		t.Errorf("the gang started %v after its estimated start", late)
	}
}
