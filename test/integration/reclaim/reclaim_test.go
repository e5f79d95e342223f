// Package reclaim_test runs CalderaReclaim end to end with the shipped
// configuration: a real kube-apiserver on an embedded etcd, the CRDs from
// manifests/crds, and the real scheduler. Scenarios run one after another
// (fair shares are computed over every node of the cluster), each with its
// own nodes, queues, namespace and scheduler.
package reclaim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	converge = 90 * time.Second
	timeout  = 30 * time.Second
	// settle is how long a scenario watches for evictions that must not happen.
	settle = 10 * time.Second
)

func TestReclaim(t *testing.T) {
	env := harness.Start(t)
	newQueue := func(t *testing.T, name string, spec qapi.QueueSpec) { env.CreateQueue(t, name, spec) }
	// singletons creates n pods of cpu each in queue q, named <q>-<i>.
	singletons := func(t *testing.T, ns, q string, n int, cpu string, edit ...func(*harness.PodBuilder)) {
		t.Helper()
		for i := range n {
			b := harness.Pod(ns, fmt.Sprintf("%s-%d", q, i)).CPU(cpu).Labels(map[string]string{qapi.QueueLabel: q, "queue": q})
			for _, e := range edit {
				e(b)
			}
			env.CreatePod(t, b.Obj())
		}
	}
	reclaimable := func(weight int32) qapi.QueueSpec {
		return qapi.QueueSpec{Weight: weight, Reclaimable: ptr.To(true)}
	}

	t.Run("a queue below its share reclaims from one above it, then nothing moves", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 4, "4", "16Gi")
		newQueue(t, "team-a", reclaimable(1))
		newQueue(t, "team-b", reclaimable(1))
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		singletons(t, ns, "team-a", 16, "1")
		env.WaitBoundCount(t, ns, "queue=team-a", 16, timeout)

		start := time.Now()
		singletons(t, ns, "team-b", 8, "1")
		// Fair share is 8 cpu each: b gets at least 7 of its 8 pods, a
		// keeps at least its 8.
		harness.WaitFor(t, converge, func() (bool, error) {
			b := env.BoundPods(t, ns, "queue=team-b")
			a := env.BoundPods(t, ns, "queue=team-a")
			if a < 8 {
				return false, fmt.Errorf("team-a went below its deserved share: %d bound", a)
			}
			return b >= 7, nil
		}, "team-b to get at least 7 of its 8 pods bound")
		a, b := env.BoundPods(t, ns, "queue=team-a"), env.BoundPods(t, ns, "queue=team-b")
		harness.WaitDeletions(t, evicted, 16-a)
		t.Logf("converged in %v: team-a %d bound, team-b %d bound, %d evictions", time.Since(start).Round(time.Millisecond), a, b, evicted())
		if n := evicted(); n != 16-a {
			t.Errorf("%d pods evicted, want exactly the %d team-a lost", n, 16-a)
		}
		// Every victim has a Reclaimed Event naming the queue it went to.
		harness.WaitFor(t, timeout, func() (bool, error) {
			notes := eventsWithReason(t, env, ns, "Reclaimed")
			for _, n := range notes {
				if !strings.Contains(n, `of queue "team-b"`) || !strings.Contains(n, `queue "team-a" holds more than its deserved share`) {
					return false, fmt.Errorf("unexpected Reclaimed Event %q", n)
				}
			}
			return len(notes) == 16-a, nil
		}, "a Reclaimed Event per victim")

		// Hysteresis: both queues are at their deserved share, so the pods
		// of team-a still pending (none here) or a new one in team-b do not
		// move anything.
		before := evicted()
		singletons(t, ns, "team-b-extra", 1, "1", func(b *harness.PodBuilder) {
			b.Labels(map[string]string{qapi.QueueLabel: "team-b"})
		})
		// The cpu left free (a+b of 16) may still take team-b's last pod
		// or the new one: that moves nothing. What must not happen is an
		// eviction, or team-a losing a pod.
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			if n := evicted() - before; n != 0 {
				return false, fmt.Errorf("%d evictions after convergence, want 0", n)
			}
			if got := env.BoundPods(t, ns, "queue=team-a"); got != a {
				return false, fmt.Errorf("team-a runs %d pods after convergence, want its %d", got, a)
			}
			return false, nil
		})
		if err != nil && !wait.Interrupted(err) {
			t.Fatal(err)
		}
	})

	t.Run("non-reclaimable queues and guarantees are never victims", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 4, "4", "16Gi")
		newQueue(t, "fixed", qapi.QueueSpec{Weight: 1, Reclaimable: ptr.To(false)})
		newQueue(t, "guaranteed", qapi.QueueSpec{Weight: 1, Reclaimable: ptr.To(true),
			Guarantee: v1.ResourceList{v1.ResourceCPU: resource.MustParse("7")}})
		newQueue(t, "late", reclaimable(1))
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		singletons(t, ns, "fixed", 8, "1")
		singletons(t, ns, "guaranteed", 8, "1")
		env.WaitBoundCount(t, ns, "", 16, timeout)
		singletons(t, ns, "late", 5, "1")
		// "guaranteed" may lose only what it holds above 7; "fixed" nothing.
		env.WaitBoundCount(t, ns, "queue=late", 1, converge)
		env.ConsistentlyBoundCount(t, ns, 16, settle)
		if got := env.BoundPods(t, ns, "queue=fixed"); got != 8 {
			t.Errorf("the non-reclaimable queue has %d of its 8 pods, want all", got)
		}
		if got := env.BoundPods(t, ns, "queue=guaranteed"); got != 7 {
			t.Errorf("the guaranteed queue has %d pods bound, want its guarantee of 7", got)
		}
		if n := evicted(); n != 1 {
			t.Errorf("%d evictions, want 1", n)
		}
	})

	t.Run("within a queue, a higher-priority pod preempts lower-priority ones", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "16Gi")
		newQueue(t, "solo", reclaimable(1))
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		singletons(t, ns, "solo", 4, "1", func(b *harness.PodBuilder) { b.Priority(1) })
		env.WaitBoundCount(t, ns, "queue=solo", 4, timeout)
		// Equal priority preempts nothing.
		env.CreatePod(t, harness.Pod(ns, "peer").CPU("1").Priority(1).Labels(map[string]string{qapi.QueueLabel: "solo"}).Obj())
		env.ConsistentlyUnbound(t, ns, settle, "peer")
		if n := evicted(); n != 0 {
			t.Fatalf("%d evictions for an equal-priority pod, want 0", n)
		}
		env.CreatePod(t, harness.Pod(ns, "urgent").CPU("2").Priority(100).Labels(map[string]string{qapi.QueueLabel: "solo"}).Obj())
		env.WaitBound(t, ns, converge, "urgent")
		waitEvictions(t, evicted, 2, "the 2 that make room for 2 cpu")
		// The scheduler's own Preempted Event names the preemptor's UID;
		// Caldera's names its queue, once per victim. Events are written
		// asynchronously, after the bind the wait above saw.
		harness.WaitFor(t, timeout, func() (bool, error) {
			named := 0
			for _, n := range eventsWithReason(t, env, ns, "Preempted") {
				if strings.Contains(n, `a higher-priority group of queue "solo"`) {
					named++
				}
			}
			if named > 2 {
				return false, fmt.Errorf("%d Preempted Events name queue solo, want one per victim (2)", named)
			}
			return named == 2, nil
		}, "a Preempted Event naming queue solo per victim (2)")
	})

	t.Run("a victim gang is taken whole, never left below minMember", func(t *testing.T) {
		ns := env.Namespace(t)
		nodes := env.AddNodes(t, 4, "4", "16Gi")
		on := func(i int) map[string]string { return map[string]string{v1.LabelHostname: nodes[i].Name} }
		newQueue(t, "batch", reclaimable(1))
		newQueue(t, "urgent", reclaimable(1))
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		// batch fills the cluster: a gang of 4 (minMember 4) on node 0,
		// 12 singletons on the others.
		pg := harness.PodGroup(ns, "train", 4)
		pg.Labels = map[string]string{qapi.QueueLabel: "batch"}
		env.CreatePodGroup(t, pg)
		for _, m := range harness.Members(ns, "train", 4, "1") {
			m.Spec.NodeSelector = on(0)
			env.CreatePod(t, m)
		}
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=train", 4, timeout)
		for i := 1; i < 4; i++ {
			for j := range 4 {
				env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("batch-%d-%d", i, j)).CPU("1").NodeSelector(on(i)).
					Labels(map[string]string{qapi.QueueLabel: "batch"}).Obj())
			}
		}
		env.WaitBoundCount(t, ns, "", 16, timeout)

		// urgent asks for 4 cpu in all (a pod no node matches raises its
		// demand without evicting anything), so its share is 4 and batch
		// may lose 4. A 1-cpu pod that must run on node 0 cannot take one
		// member (the gang would fall to 3 of 4): the gang goes whole.
		env.CreatePod(t, harness.Pod(ns, "nowhere").CPU("3").NodeSelector(map[string]string{"no-such-label": "x"}).
			Labels(map[string]string{qapi.QueueLabel: "urgent"}).Obj())
		env.CreatePod(t, harness.Pod(ns, "needs-node0").CPU("1").NodeSelector(on(0)).
			Labels(map[string]string{qapi.QueueLabel: "urgent"}).Obj())
		env.WaitBound(t, ns, converge, "needs-node0")
		if got := env.BoundPods(t, ns, v1alpha1.PodGroupLabel+"=train"); got != 0 {
			t.Errorf("the gang has %d of 4 members bound, want 0 (taken whole) — never fewer than minMember", got)
		}
		waitEvictions(t, evicted, 4, "the gang's 4")
		env.WaitEvent(t, ns, "train", "Reclaimed", timeout)
	})

	t.Run("a gang that cannot fit even after evictions evicts nothing", func(t *testing.T) {
		ns := env.Namespace(t)
		nodes := env.AddNodes(t, 4, "4", "16Gi")
		newQueue(t, "full", reclaimable(1))
		newQueue(t, "big", reclaimable(1))
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		singletons(t, ns, "full", 16, "1")
		env.WaitBoundCount(t, ns, "queue=full", 16, timeout)
		// Two members of 3 cpu pinned to one 4-cpu node: within the
		// queue's share, but never placeable together.
		pg := harness.PodGroup(ns, "pinned", 2)
		pg.Labels = map[string]string{qapi.QueueLabel: "big"}
		env.CreatePodGroup(t, pg)
		for _, m := range harness.Members(ns, "pinned", 2, "3") {
			m.Spec.NodeSelector = map[string]string{v1.LabelHostname: nodes[0].Name}
			env.CreatePod(t, m)
		}
		// Admission sees it (the placement check: even with the room
		// reclaim could free, one member per node), so the gang never
		// reaches PostFilter.
		ev := env.WaitEvent(t, ns, "pinned", "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "members not placeable") {
			t.Errorf("NotAdmitted note = %q, want the members not placeable", ev.Note)
		}
		env.ConsistentlyBoundCount(t, ns, 16, settle)
		if n := evicted(); n != 0 {
			t.Fatalf("%d evictions for a gang that cannot fit, want 0", n)
		}
	})
}

// waitEvictions waits until evicted counts want deletions and fails at
// once if it counts more. The count comes from the test's own watch, which
// may deliver a victim's deletion after the scheduler's informer did.
func waitEvictions(t *testing.T, evicted func() int, want int, what string) {
	t.Helper()
	harness.WaitFor(t, timeout, func() (bool, error) {
		n := evicted()
		if n > want {
			return false, fmt.Errorf("%d evictions, want %s", n, what)
		}
		return n == want, nil
	}, fmt.Sprintf("%d evictions (%s)", want, what))
}

// eventsWithReason returns the notes of ns's Events with reason.
func eventsWithReason(t *testing.T, env *harness.Env, ns, reason string) []string {
	t.Helper()
	list, err := env.Client.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}
