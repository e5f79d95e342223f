package queues_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestOverrunEvictedForReservation: a job let into a reservation's room on
// its promise (an annotation) to end first, and still running when the
// reservation starts, is evicted then, with Events that say why; the
// reserved gang then starts. Nothing is evicted before the start, and a
// pod past an activeDeadlineSeconds is left to its kubelet.
func TestOverrunEvictedForReservation(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	nodes := env.AddNodes(t, 3, "4", "16Gi")
	env.StartScheduler(t)
	deleted := env.CountDeletions(t, ns)

	// n0 runs a job whose kubelet stops it 15 s after it started
	// (activeDeadlineSeconds), n1 one that promises ten minutes; n2 is
	// empty. The gang of two 4-cpu members fits once n0 is empty.
	r0 := harness.Pod(ns, "r0").CPU("4").Obj()
	r0.Spec.ActiveDeadlineSeconds = ptr.To[int64](15)
	r0.Spec.NodeName = nodes[0].Name
	env.CreatePod(t, r0)
	env.SetPodPhase(t, ns, "r0", v1.PodRunning)
	r1 := limited(harness.Pod(ns, "r1").CPU("4").Obj(), 600)
	r1.Spec.NodeName = nodes[1].Name
	env.CreatePod(t, r1)
	env.SetPodPhase(t, ns, "r1", v1.PodRunning)
	env.CreatePodGroup(t, harness.PodGroup(ns, "train", 2))
	env.CreatePods(t, harness.Members(ns, "train", 2, "4")...)
	eta := waitExpectedStart(t, env, ns, "train")

	// A job that promises 5 s ends before the reservation: it runs now on
	// n2 (backfill), and goes on running past its promise.
	env.CreatePod(t, limited(harness.Pod(ns, "quick").CPU("4").Obj(), 5))
	if got := env.WaitBound(t, ns, timeout, "quick")["quick"]; got != nodes[2].Name {
		t.Fatalf("quick bound to %s, want %s", got, nodes[2].Name)
	}
	env.SetPodPhase(t, ns, "quick", v1.PodRunning)
	quick := getPod(t, env, ns, "quick")
	promised := quick.Status.StartTime.Add(5 * time.Second)
	if !promised.Before(eta) {
		t.Fatalf("quick promised to end at %v, not before the reservation's %v", promised, eta)
	}

	// Past its promise it is not evicted while the reservation has not
	// started: its room is no one's yet.
	env.ConsistentlyUnbound(t, ns, time.Until(eta)-time.Second, "train-0", "train-1")
	if n := deleted(); n != 0 {
		t.Fatalf("%d pods deleted before the reservation's start", n)
	}

	// At the start the kubelet stops r0 (its deadline), and quick, 5 s
	// promised and still running, is evicted for the gang.
	harness.WaitFor(t, time.Until(eta)+5*time.Second, func() (bool, error) { return !time.Now().Before(eta), nil }, "the expected start")
	env.SetPodPhase(t, ns, "r0", v1.PodSucceeded)
	ev := env.WaitEvent(t, ns, "quick", admission.ReasonOverranRunLimit, timeout)
	evictedAfter := time.Since(eta)
	want := "past its run-time limit of 5s (pod annotation " + runlimit.Annotation + ") into the reservation of pg:" + ns + "/train from " + eta.UTC().Format(time.RFC3339)
	if !strings.HasPrefix(ev.Note, "ran ") || !strings.HasSuffix(ev.Note, want) {
		t.Errorf("quick's %s Event: %q, want \"ran Ns %s\"", admission.ReasonOverranRunLimit, ev.Note, want)
	}
	if ev := env.WaitEvent(t, ns, "train", admission.ReasonOverranRunLimit, timeout); !strings.HasPrefix(ev.Note, ns+"/quick: ran ") {
		t.Errorf("train's %s Event: %q, want it to name ns/quick", admission.ReasonOverranRunLimit, ev.Note)
	}
	harness.WaitDeletions(t, deleted, 1)
	if _, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), "quick", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("quick after its eviction: %v, want it gone", err)
	}

	bound := env.WaitBound(t, ns, timeout, "train-0", "train-1")
	startedAfter := time.Since(eta)
	if got := []string{bound["train-0"], bound["train-1"]}; !(got[0] == nodes[0].Name && got[1] == nodes[2].Name) && !(got[0] == nodes[2].Name && got[1] == nodes[0].Name) {
		t.Errorf("train bound to %v, want n0 and n2", got)
	}
	// r1 keeps its promise: nothing else was evicted.
	if n := deleted(); n != 1 {
		t.Errorf("%d pods deleted, want quick's only", n)
	}
	getPod(t, env, ns, "r1")
	t.Logf("quick evicted %v after the reservation's start, the gang bound %v after it", evictedAfter.Round(time.Millisecond), startedAfter.Round(time.Millisecond))
	if startedAfter > 10*time.Second {
		t.Errorf("the gang started %v after its expected start", startedAfter)
	}
}
