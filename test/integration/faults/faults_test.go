// Package faults_test kills the real scheduler at bad moments and checks that
// the next one finishes the job: a real kube-apiserver on an embedded etcd,
// the CRDs from manifests/crds, and caldera-scheduler's command run as a
// separate process with the shipped configuration.
package faults_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 60 * time.Second

// TestSchedulerKilledWhileMembersWaitInPermit SIGKILLs the scheduler process
// 10 times, each time once a gang waits for room one member short (it is
// refused at admission and holds nothing), and then at a moment that varies
// by round: while it waits, at a random moment after the room is freed (the
// gang is admitted, its members reserve, wait in Permit and bind), or while
// the gang binds. The next process must
// finish every gang within its schedule timeout (never leaving it partially
// bound), and at the end no reservation outlives the processes: a whole-node
// pod fits on every node.
func TestSchedulerKilledWhileMembersWaitInPermit(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	// Four 4-cpu nodes; each gang is 16 members of 1 cpu, so it fills the
	// cluster and binds 16 pods at once: a kill can land between bindings.
	nodes := env.AddNodes(t, 4, "4", "16Gi")
	const rounds, members, gangTimeout = 10, 16, 30
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("random moments from seed %d", seed)
	partial := 0
	for i := range rounds {
		// A 1-cpu blocker leaves room for 15 members only: the gang cannot
		// be placed until it goes.
		blocker := fmt.Sprintf("blocker-%d", i)
		env.CreatePod(t, harness.Pod(ns, blocker).CPU("1").Scheduler("default-scheduler").Obj())
		bindTo(t, env, ns, blocker, nodes[i%len(nodes)].Name)

		p := env.StartSchedulerProcess(t)
		gang := fmt.Sprintf("gang-%d", i)
		selector := v1alpha1.PodGroupLabel + "=" + gang
		env.CreatePodGroup(t, harness.PodGroup(ns, gang, members, harness.PGTimeout(gangTimeout)))
		env.CreatePods(t, harness.Members(ns, gang, members, "1")...)
		// A gang that cannot be placed whole is not admitted (admission's
		// placement check): it holds no node, not even through Permit
		// waits or nominations, while it waits for the blocker's room.
		ev := env.WaitEvent(t, ns, gang, "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, "not placeable") {
			t.Fatalf("%s NotAdmitted for %q, want the placement check's reason", gang, ev.Note)
		}
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" {
				t.Fatalf("member %s holds node %q (nominated %q) while its gang cannot be placed", p.Name, p.Spec.NodeName, p.Status.NominatedNodeName)
			}
		}

		// The moment of the kill, by round: while the members wait (the room
		// is freed afterwards), at a random moment up to 1.5 s after the room
		// is freed (the last member is retried after the gang's backoff, so the
		// gang may be completing or binding), or as soon as the first member
		// is seen bound (the others' bindings may be in flight).
		var moment string
		switch i % 3 {
		case 0:
			wait := time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
			time.Sleep(wait) // the random moment itself, not a wait for a condition
			p.Kill(t)
			moment = fmt.Sprintf("%v into the wait for room", wait.Round(time.Millisecond))
		case 1:
			deleteNow(t, env, ns, blocker)
			wait := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
			time.Sleep(wait) // as above
			p.Kill(t)
			moment = fmt.Sprintf("%v after the room was freed", wait.Round(time.Millisecond))
		case 2:
			deleteNow(t, env, ns, blocker)
			harness.WaitFor(t, timeout, func() (bool, error) {
				return env.BoundPods(t, ns, selector) > 0, nil
			}, "a member of "+gang+" bound")
			p.Kill(t)
			moment = "as the first member was seen bound"
		}
		boundAtKill := env.BoundPods(t, ns, selector)
		if boundAtKill > 0 && boundAtKill < members {
			partial++
		}
		if i%3 == 0 {
			if boundAtKill != 0 {
				t.Fatalf("round %d: %d members of %s bound while the last could not fit", i, boundAtKill, gang)
			}
			deleteNow(t, env, ns, blocker)
		}
		t.Logf("round %d: killed %s; %d/%d members bound then", i, moment, boundAtKill, members)

		// A new process finishes the gang, well within its schedule timeout.
		p2 := env.StartSchedulerProcess(t)
		env.WaitBoundCount(t, ns, selector, members, gangTimeout*time.Second)
		p2.Kill(t)
		// Free the nodes for the next round.
		env.DeleteGroup(t, ns, gang)
	}
	t.Logf("%d of %d kills left a gang partially bound; the next process completed each", partial, rounds)

	// Nothing held: not by a dead process's Permit waits, nor by the
	// nominations upstream wrote for them.
	env.StartSchedulerProcess(t)
	for i := range nodes {
		env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("whole-%d", i)).CPU("4").Obj())
	}
	env.WaitBoundCount(t, ns, "", len(nodes), timeout)
}

// bindTo binds a pod to a node through the API, as a scheduler would.
func bindTo(t *testing.T, env *harness.Env, ns, pod, node string) {
	t.Helper()
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := env.Client.CoreV1().Pods(ns).Bind(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding %s to %s: %v", pod, node, err)
	}
}

// deleteNow deletes a pod with no grace period and waits until it is gone.
func deleteNow(t *testing.T, env *harness.Env, ns, pod string) {
	t.Helper()
	if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("deleting %s: %v", pod, err)
	}
	env.WaitPodDeleted(t, ns, pod, timeout)
}
