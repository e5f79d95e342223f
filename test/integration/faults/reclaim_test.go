package faults_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestSchedulerKilledMidReclaim SIGKILLs the scheduler as soon as its first
// reclaim eviction is seen, while more evictions of the plan may be in flight
// and the evictions it keeps in memory are lost. The next process must finish
// the reclaim without taking the victim queue below its deserved share and
// without evicting a pod more than the queues' shares need, reach 8 and 8,
// then leave everything where it is.
func TestSchedulerKilledMidReclaim(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	env.AddNodes(t, 4, "4", "16Gi")
	for _, q := range []string{"team-a", "team-b"} {
		env.CreateQueue(t, q, qapi.QueueSpec{Weight: 1, Reclaimable: ptr.To(true)})
	}
	singletons := func(q string, n int) {
		for i := range n {
			env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("%s-%d", q, i)).CPU("1").
				Labels(map[string]string{qapi.QueueLabel: q, "queue": q}).Obj())
		}
	}
	evicted := env.CountDeletions(t, ns)

	first := env.StartSchedulerProcess(t)
	singletons("team-a", 16)
	env.WaitBoundCount(t, ns, "queue=team-a", 16, timeout)
	// 16 cpu, two queues of weight 1: each deserves 8.
	singletons("team-b", 8)
	harness.WaitFor(t, timeout, func() (bool, error) { return evicted() > 0, nil }, "the first eviction")
	first.Kill(t)
	atKill := evicted()

	env.StartSchedulerProcess(t)
	harness.WaitFor(t, 90*time.Second, func() (bool, error) {
		a, b := env.BoundPods(t, ns, "queue=team-a"), env.BoundPods(t, ns, "queue=team-b")
		if a < 8 {
			return false, fmt.Errorf("team-a went below its deserved share: %d bound", a)
		}
		// Wait for the end state itself, not a point on the way: with
		// team-b at 7 an eviction for its 8th pod may still be in flight
		// (the victim terminating, so still bound), and settling must not
		// be judged from there.
		return a == 8 && b == 8, nil
	}, "team-a and team-b to hold their deserved 8 pods each")
	a, b := env.BoundPods(t, ns, "queue=team-a"), env.BoundPods(t, ns, "queue=team-b")
	harness.WaitDeletions(t, evicted, 16-a)
	t.Logf("killed after %d evictions; converged with team-a %d, team-b %d, %d evictions in all", atKill, a, b, evicted())
	if n := evicted(); n != 16-a {
		t.Errorf("%d pods evicted, want exactly the %d team-a lost", n, 16-a)
	}
	// Settled: nothing moves any more.
	env.ConsistentlyBoundCount(t, ns, a+b, 10*time.Second)
	if n := evicted(); n != 16-a {
		t.Fatalf("%d evictions after convergence, want none", n-(16-a))
	}
}
