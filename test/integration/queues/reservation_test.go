package queues_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestReservationAndBackfill: a gang that cannot start now is reserved for
// at the earliest time its members fit, given the run-time limits of the
// pods it waits for; its PodGroup says when; a job that ends before then
// runs now in its room, an unbounded one waits; and the gang starts when
// its reservation said.
func TestReservationAndBackfill(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	nodes := env.AddNodes(t, 3, "4", "16Gi")
	env.StartScheduler(t)

	// n0 runs a job until 20 s after it started, n1 one for ten minutes;
	// n2 is empty. The gang of two 4-cpu members fits once n0 is empty.
	running := func(name string, node *v1.Node, seconds int) {
		p := limited(harness.Pod(ns, name).CPU("4").Obj(), seconds)
		p.Spec.NodeName = node.Name
		env.CreatePod(t, p)
		env.SetPodPhase(t, ns, name, v1.PodRunning)
	}
	running("r0", nodes[0], 20)
	running("r1", nodes[1], 600)
	env.CreatePodGroup(t, harness.PodGroup(ns, "train", 2))
	env.CreatePods(t, harness.Members(ns, "train", 2, "4")...)
	eta := waitExpectedStart(t, env, ns, "train")
	r0 := getPod(t, env, ns, "r0")
	if want := r0.Status.StartTime.Truncate(time.Second).Add(20 * time.Second); eta.Sub(want).Abs() > time.Second {
		t.Errorf("expected start %v, want r0's end %v", eta, want)
	}

	// A 5-second job ends before the reservation: it runs now on n2.
	env.CreatePod(t, limited(harness.Pod(ns, "quick").CPU("4").Obj(), 5))
	env.WaitBound(t, ns, timeout, "quick")
	env.SetPodPhase(t, ns, "quick", v1.PodSucceeded)

	// A job without a limit would hold n2 past the reservation: it waits.
	env.CreatePod(t, harness.Pod(ns, "endless").CPU("4").Obj())
	ev := env.WaitEvent(t, ns, "endless", "NotAdmitted", timeout)
	if !strings.Contains(ev.Note, "delay the reservation of pg:"+ns+"/train") {
		t.Errorf("endless: NotAdmitted %q, want the reservation it would delay", ev.Note)
	}
	env.ConsistentlyUnbound(t, ns, min(quiet, time.Until(eta)-time.Second), "endless", "train-0", "train-1")

	// r0 ends at its limit, as its kubelet would end it: the gang starts
	// then, not later than its expected start and the next passes.
	harness.WaitFor(t, time.Until(eta)+5*time.Second, func() (bool, error) { return !time.Now().Before(eta), nil }, "the expected start")
	env.SetPodPhase(t, ns, "r0", v1.PodSucceeded)
	env.WaitBound(t, ns, timeout, "train-0", "train-1")
	if late := time.Since(eta); late > 10*time.Second {
		t.Errorf("the gang started %v after its expected start", late)
	}
}

// limited declares a run-time limit on pod.
func limited(pod *v1.Pod, seconds int) *v1.Pod {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[runlimit.Annotation] = fmt.Sprint(seconds)
	return pod
}

// waitExpectedStart waits for the scheduler to write the PodGroup's
// expected start and returns it.
func waitExpectedStart(t *testing.T, env *harness.Env, ns, name string) time.Time {
	t.Helper()
	var at time.Time
	harness.WaitFor(t, timeout, func() (bool, error) {
		pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v, ok := pg.Annotations[qapi.ExpectedStartAnnotation]
		if !ok {
			return false, nil
		}
		at, err = time.Parse(time.RFC3339, v)
		return err == nil, err
	}, "the expected start of "+name)
	return at
}

func getPod(t *testing.T, env *harness.Env, ns, name string) *v1.Pod {
	t.Helper()
	p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReservedRoomKeptFromPlacement: admission lets a long job in because
// room no reservation needs is free, and kube-scheduler, packing pods
// (MostAllocated), would still put it on the fuller node whose room the
// reservation needs; the CalderaReservation Filter keeps it off that node.
func TestReservedRoomKeptFromPlacement(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	nodes := env.AddNodes(t, 3, "4", "16Gi")
	env.StartScheduler(t)

	// n0 and n1 run jobs that end within 30 s, n1's taking half the node;
	// n2 is empty. The gang of two 4-cpu members is reserved on n0 and n1.
	running := func(name string, node *v1.Node, cpu string) {
		p := limited(harness.Pod(ns, name).CPU(cpu).Obj(), 30)
		p.Spec.NodeName = node.Name
		env.CreatePod(t, p)
		env.SetPodPhase(t, ns, name, v1.PodRunning)
	}
	running("r0", nodes[0], "4")
	running("r1", nodes[1], "2")
	env.CreatePodGroup(t, harness.PodGroup(ns, "train", 2))
	env.CreatePods(t, harness.Members(ns, "train", 2, "4")...)
	waitExpectedStart(t, env, ns, "train")

	// A 2-cpu job of ten minutes fits n1 now (the fuller node, which
	// packing prefers) and n2; only n2 leaves the reservation whole.
	env.CreatePod(t, limited(harness.Pod(ns, "long").CPU("2").Obj(), 600))
	bound := env.WaitBound(t, ns, timeout, "long")
	if got, want := bound["long"], nodes[2].Name; got != want {
		t.Errorf("long bound to %s, want %s: the rest of the room is reserved for train", got, want)
	}
}
