package faults_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestSchedulerKilledMidReclaim SIGKILLs the scheduler as soon as its first
// reclaim eviction is seen, while more evictions of the plan may be in flight
// and the evictions it keeps in memory are lost. The next process must finish
// the reclaim without taking the victim queue below its deserved share and
// without evicting a pod more than the queues' shares need, then leave
// everything where it is.
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
	evicted := countDeletions(t, env, ns)

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
		return b >= 7, nil
	}, "team-b to get at least 7 of its 8 pods bound")
	a, b := env.BoundPods(t, ns, "queue=team-a"), env.BoundPods(t, ns, "queue=team-b")
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

// countDeletions counts pod deletions in ns from now on. It also stands in
// for the kubelet, which the harness does not run: a pod left terminating (its
// deletion started but not finished: here when the API server times out a
// victim's DELETE as its client is killed) is deleted for good, as a kubelet
// does once the containers have stopped. Without it such a victim would block
// its node's preemptor forever (upstream waits for terminating victims).
func countDeletions(t *testing.T, env *harness.Env, ns string) func() int {
	t.Helper()
	w, err := env.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				mu.Lock()
				n++
				mu.Unlock()
			case watch.Modified:
				if p, ok := ev.Object.(*v1.Pod); ok && p.DeletionTimestamp != nil {
					err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
					if err != nil && !apierrors.IsNotFound(err) && t.Context().Err() == nil {
						t.Errorf("finishing the deletion of %s: %v", p.Name, err)
					}
				}
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}
