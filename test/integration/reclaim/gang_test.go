package reclaim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestGangReclaim runs the "gangs decided as one unit" scenarios: a gang is
// the preemptor (in its queue, and across queues), victim gangs are never
// left below minMember, terminating victims are not evicted for twice, and a
// disruption budget is counted down per victim.
func TestGangReclaim(t *testing.T) {
	env := harness.Start(t)
	reclaimable := qapi.QueueSpec{Weight: 1, Reclaimable: ptr.To(true)}
	// gang creates PodGroup name (minMember min) in queue q and n members
	// of cpu each at priority prio.
	gang := func(t *testing.T, ns, name, q string, n int, min int32, cpu string, prio int32, edit ...func(*v1.Pod)) {
		t.Helper()
		pg := harness.PodGroup(ns, name, min)
		pg.Labels = map[string]string{qapi.QueueLabel: q}
		env.CreatePodGroup(t, pg)
		for i := range n {
			p := harness.Pod(ns, fmt.Sprintf("%s-%d", name, i)).CPU(cpu).Group(name).Priority(prio).Obj()
			for _, e := range edit {
				e(p)
			}
			env.CreatePod(t, p)
		}
	}
	sel := func(pg string) string { return v1alpha1.PodGroupLabel + "=" + pg }
	// floor watches, for settle, that no victim gang is left with some but
	// fewer than its minMember members running, nor loses more to further
	// evictions. (While the Executor deletes a victim gang taken whole, one
	// pod after the other, the gang passes through such counts: the API has
	// no atomic delete of several pods. What the plan decides is what is
	// left once its evictions are done, and that is what this checks.)
	floor := func(t *testing.T, ns string, evicted func() int, mins map[string]int) {
		t.Helper()
		want := evicted()
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, settle, true, func(context.Context) (bool, error) {
			for pg, min := range mins {
				if n := env.RunningPods(t, ns, sel(pg)); n > 0 && n < min {
					return false, fmt.Errorf("gang %s has %d members running, below its minMember %d", pg, n, min)
				}
			}
			if n := evicted(); n != want {
				return false, fmt.Errorf("%d evictions, want no more than the %d before", n, want)
			}
			return false, nil
		})
		if err != nil && !wait.Interrupted(err) {
			t.Fatal(err)
		}
	}

	t.Run("a gang preempts a lower-priority gang of its queue", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		env.CreateQueue(t, "shared", reclaimable)
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		// low fills both nodes; its 2 members above minMember are not
		// enough room for high, so low goes whole.
		gang(t, ns, "low", "shared", 8, 6, "1", 1)
		env.WaitBoundCount(t, ns, sel("low"), 8, timeout)
		gang(t, ns, "high", "shared", 4, 4, "1", 100)
		harness.WaitFor(t, converge, func() (bool, error) {
			return env.RunningPods(t, ns, sel("high")) == 4, nil
		}, "the high-priority gang to have its 4 members running")
		waitEvictions(t, evicted, 8, "the low gang's 8")
		floor(t, ns, evicted, map[string]int{"low": 6})
		if n := env.RunningPods(t, ns, sel("low")); n != 0 {
			t.Errorf("the low gang has %d members running, want 0 (taken whole)", n)
		}
	})

	t.Run("a gang of a starved queue reclaims a whole gang from a queue above its share", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		env.CreateQueue(t, "rich", reclaimable)
		env.CreateQueue(t, "starved", reclaimable)
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		gang(t, ns, "r1", "rich", 4, 4, "1", 0)
		gang(t, ns, "r2", "rich", 4, 4, "1", 0)
		env.WaitBoundCount(t, ns, "", 8, timeout)
		gang(t, ns, "s", "starved", 4, 4, "1", 0)
		harness.WaitFor(t, converge, func() (bool, error) {
			return env.RunningPods(t, ns, sel("s")) == 4, nil
		}, "the starved queue's gang to have its 4 members running")
		waitEvictions(t, evicted, 4, "one rich gang's 4")
		floor(t, ns, evicted, map[string]int{"r1": 4, "r2": 4})
		r1, r2 := env.RunningPods(t, ns, sel("r1")), env.RunningPods(t, ns, sel("r2"))
		if r1+r2 != 4 {
			t.Errorf("the rich queue's gangs run %d and %d members, want one of them whole (4) and the other gone", r1, r2)
		}
	})

	t.Run("an elastic victim gang loses only the members above minMember", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		env.CreateQueue(t, "rich", reclaimable)
		env.CreateQueue(t, "starved", reclaimable)
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		gang(t, ns, "elastic", "rich", 8, 4, "1", 0)
		env.WaitBoundCount(t, ns, sel("elastic"), 8, timeout)
		gang(t, ns, "s", "starved", 4, 4, "1", 0)
		harness.WaitFor(t, converge, func() (bool, error) {
			return env.RunningPods(t, ns, sel("s")) == 4, nil
		}, "the starved queue's gang to have its 4 members running")
		waitEvictions(t, evicted, 4, "the elastic gang's 4 surplus members")
		floor(t, ns, evicted, map[string]int{"elastic": 4})
		if n := env.RunningPods(t, ns, sel("elastic")); n != 4 {
			t.Errorf("the elastic gang runs %d members, want its minMember 4", n)
		}
	})

	// within watches, until the condition holds, that ns never has more
	// than max pods bound (terminating ones included: they still hold
	// their room), which is how a queue's capability shows when every pod
	// asks the same.
	within := func(t *testing.T, ns string, max int, cond func() bool, what string) {
		t.Helper()
		harness.WaitFor(t, converge, func() (bool, error) {
			if n := env.BoundPods(t, ns, ""); n > max {
				return false, fmt.Errorf("%d pods bound, more than the %d the queue's capability allows", n, max)
			}
			return cond(), nil
		}, what)
	}
	// fill binds four 2-cpu pods of queue q at priority prio, named
	// prefix-0 to prefix-3.
	fill := func(t *testing.T, ns, prefix, q string, prio int32) {
		t.Helper()
		for i := range 4 {
			env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("%s-%d", prefix, i)).CPU("2").Priority(prio).Labels(map[string]string{qapi.QueueLabel: q}).Obj())
		}
		env.WaitBoundCount(t, ns, "", 4, timeout)
	}
	capped := func(cores string) qapi.QueueSpec {
		q := reclaimable
		q.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cores)}
		return q
	}

	t.Run("a gang admitted on room of its queue's lower priorities keeps the capability", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 3, "4", "16Gi")
		env.CreateQueue(t, "capped", capped("8"))
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		// The queue is at its capability on two nodes; the third is free.
		fill(t, ns, "low", "capped", 1)
		// The high-priority gang fits the free node, but only by evicting
		// as much of the queue's lower priorities may it run.
		gang(t, ns, "high", "capped", 2, 2, "2", 100)
		within(t, ns, 4, func() bool { return env.RunningPods(t, ns, sel("high")) == 2 }, "the high-priority gang to run")
		waitEvictions(t, evicted, 2, "2 low-priority pods, the room the gang needs under the capability")
	})

	t.Run("a starved child reclaims under its parent's capability while nodes are free", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 3, "4", "16Gi")
		env.CreateQueue(t, "org", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}})
		for _, q := range []string{"a", "b"} {
			spec := reclaimable
			spec.Parent = "org"
			env.CreateQueue(t, q, spec)
		}
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		// a takes the parent's whole capability while b has no demand.
		fill(t, ns, "a", "a", 0)
		// b's gang asks for its deserved half; a node is free, yet the
		// room must come from a's excess.
		gang(t, ns, "b", "b", 2, 2, "2", 0)
		within(t, ns, 4, func() bool { return env.RunningPods(t, ns, sel("b")) == 2 }, "the starved child's gang to run")
		waitEvictions(t, evicted, 2, "a's 2 pods above its deserved share")
	})

	t.Run("victims that take time to terminate are not evicted for twice", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		env.CreateQueue(t, "shared", reclaimable)
		env.StartScheduler(t)
		// No CountDeletions: it would finish the victims at once. With a
		// grace period and no kubelet, they stay terminating on their
		// nodes until FinishTerminating.
		evicted := env.CountEvictions(t, ns)
		graceful := func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](300) }

		// Four 2-cpu singletons fill the nodes.
		for i := range 4 {
			p := harness.Pod(ns, fmt.Sprintf("low-%d", i)).CPU("2").Priority(1).Labels(map[string]string{qapi.QueueLabel: "shared"}).Obj()
			graceful(p)
			env.CreatePod(t, p)
		}
		env.WaitBoundCount(t, ns, "", 4, timeout)

		// A 1-cpu pod evicts one of them; a second 1-cpu pod fits in the
		// other half of that victim's room, once it is gone. Counting the
		// victim's room as used while the first pod is nominated to it, the
		// second pod evicted another victim.
		env.CreatePod(t, harness.Pod(ns, "first").CPU("1").Priority(100).Labels(map[string]string{qapi.QueueLabel: "shared"}).Obj())
		waitEvictions(t, evicted, 1, "the 1 that makes room for the first pod")
		env.CreatePod(t, harness.Pod(ns, "second").CPU("1").Priority(100).Labels(map[string]string{qapi.QueueLabel: "shared"}).Obj())

		// A gang whose two members each need a node's worth of the
		// remaining victims' room: its plan evicts for both members at
		// once; the member that fails Filter while they terminate must not
		// plan again.
		gang(t, ns, "g", "shared", 2, 2, "2", 100)
		waitEvictions(t, evicted, 3, "1 for the first pod and 2 for the gang")
		consistentlyEvictions(t, evicted, 3, settle)

		if n := env.FinishTerminating(t, ns); n != 3 {
			t.Errorf("%d pods were terminating, want the 3 victims", n)
		}
		env.WaitBound(t, ns, converge, "first", "second", "g-0", "g-1")
		consistentlyEvictions(t, evicted, 3, settle)
	})

	t.Run("a disruption budget allowing one disruption gives up one pod", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "16Gi")
		env.CreateQueue(t, "shared", reclaimable)
		env.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)

		// The budget is in place (and in the scheduler's informer) long
		// before the preemptor comes. The two pods it guards have the
		// lowest priority: the first choice of victims, were it not for it.
		allowOne(t, env, ns, "guarded", map[string]string{"app": "guarded"})
		for i := range 2 {
			env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("guarded-%d", i)).CPU("1").Priority(1).
				Labels(map[string]string{qapi.QueueLabel: "shared", "app": "guarded"}).Obj())
			env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("open-%d", i)).CPU("1").Priority(2).
				Labels(map[string]string{qapi.QueueLabel: "shared"}).Obj())
		}
		env.WaitBoundCount(t, ns, "", 4, timeout)

		env.CreatePod(t, harness.Pod(ns, "urgent").CPU("2").Priority(100).Labels(map[string]string{qapi.QueueLabel: "shared"}).Obj())
		env.WaitBound(t, ns, converge, "urgent")
		waitEvictions(t, evicted, 2, "the 2 that make room for 2 cpu")
		if n := env.RunningPods(t, ns, "app=guarded"); n != 1 {
			t.Errorf("%d of the 2 guarded pods run, want 1: the budget allows one disruption", n)
		}
	})
}

// allowOne creates a PodDisruptionBudget over the pods matching labels and
// writes the status the disruption controller (which the harness does not
// run) would: one disruption allowed.
func allowOne(t *testing.T, env *harness.Env, ns, name string, labels map[string]string) {
	t.Helper()
	pdbs := env.Client.PolicyV1().PodDisruptionBudgets(ns)
	pdb, err := pdbs.Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1,
		CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2,
	}
	if _, err := pdbs.UpdateStatus(t.Context(), pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, timeout, func() (bool, error) {
		got, err := pdbs.Get(t.Context(), name, metav1.GetOptions{})
		return err == nil && got.Status.DisruptionsAllowed == 1, err
	}, "the budget's status")
}

// consistentlyEvictions fails when evicted moves off want within d.
func consistentlyEvictions(t *testing.T, evicted func() int, want int, d time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, d, true, func(context.Context) (bool, error) {
		if n := evicted(); n != want {
			return false, fmt.Errorf("%d evictions, want %d", n, want)
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}
}
