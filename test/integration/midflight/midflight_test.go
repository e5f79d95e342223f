// Package midflight_test deletes objects while Caldera is acting on them — a
// PodGroup or a member pod while members wait in Permit, a Queue while its
// groups run — against a real kube-apiserver and the real scheduler, and
// checks that nothing is held afterwards and nothing is stuck: the room the
// gang reserved is free at once (not after its Permit timeout), running work
// is untouched, and the work binds once the object is back.
// docs/reliability.md lists what the user sees in each case.
package midflight_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout = 30 * time.Second
	quiet   = 3 * time.Second
)

func TestMidflight(t *testing.T) {
	env := harness.Start(t)

	// waitingGang creates a gang of three on a 4-cpu node whose first two
	// members (2 cpu each) take the node and wait in Permit for the third,
	// held back by a scheduling gate; it returns once they hold the node.
	deletePod := func(t *testing.T, ns, name string) {
		t.Helper()
		if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		env.WaitPodDeleted(t, ns, name, timeout)
	}
	// Deletions while members wait in Permit (the PodGroup, a member) are
	// covered by the cache's unit tests (TestPodGroupDeleteRejectsWaitingMembers,
	// TestUnreserveReleasesGang): end to end, a gang no longer waits in
	// Permit for long. Its scenarios here held a third member back with a
	// scheduling gate, and gated members no longer count towards minMember.

	t.Run("Node deleted under a running gang", func(t *testing.T) {
		ns := env.Namespace(t)
		nodes := env.AddNodes(t, 2, "2", "8Gi")
		env.StartScheduler(t)
		env.CreatePodGroup(t, harness.PodGroup(ns, "spread", 4))
		pods := harness.Members(ns, "spread", 4, "1")
		env.CreatePods(t, pods...)
		placement := env.WaitBound(t, ns, timeout, "spread-0", "spread-1", "spread-2", "spread-3")
		for _, p := range pods {
			env.SetPodPhase(t, ns, p.Name, v1.PodRunning)
		}
		env.WaitPodGroupPhase(t, ns, "spread", v1alpha1.PodGroupRunning, timeout)

		// The node goes; the pod garbage collector (played here: no
		// controller-manager runs) deletes its pods, and a Job would
		// replace them.
		lost := nodes[0].Name
		if err := env.Client.CoreV1().Nodes().Delete(t.Context(), lost, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		var replaced []string
		for _, p := range pods {
			if placement[p.Name] == lost {
				deletePod(t, ns, p.Name)
				replaced = append(replaced, p.Name)
			}
		}
		if len(replaced) == 0 || len(replaced) == len(pods) {
			t.Fatalf("the gang should have spanned both nodes: %v", placement)
		}
		for _, name := range replaced {
			env.CreatePod(t, harness.Pod(ns, name).CPU("1").Group("spread").Obj())
		}
		// The survivors keep running; the replacements wait for room
		// instead of breaking them.
		env.WaitUnschedulable(t, ns, replaced[0], timeout)
		env.ConsistentlyBoundCount(t, ns, len(pods)-len(replaced), quiet)

		// Room comes back: the replacements join the running gang.
		env.AddNodes(t, 1, "2", "8Gi")
		env.WaitBound(t, ns, timeout, replaced...)
	})

	t.Run("Queue deleted while its groups run", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.StartScheduler(t)
		env.CreateQueue(t, "temp", qapi.QueueSpec{Weight: 1})
		running := harness.PodGroup(ns, "running", 2)
		running.Labels = map[string]string{qapi.QueueLabel: "temp"}
		env.CreatePodGroup(t, running)
		env.CreatePods(t, harness.Members(ns, "running", 2, "1")...)
		env.WaitBound(t, ns, timeout, "running-0", "running-1")
		env.SetPodPhase(t, ns, "running-0", v1.PodRunning)
		env.SetPodPhase(t, ns, "running-1", v1.PodRunning)
		env.WaitPodGroupPhase(t, ns, "running", v1alpha1.PodGroupRunning, timeout)

		if err := env.QueueClient().SchedulingV1alpha1().Queues().Delete(t.Context(), "temp", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		late := harness.PodGroup(ns, "late", 2)
		late.Labels = map[string]string{qapi.QueueLabel: "temp"}
		env.CreatePodGroup(t, late)
		env.CreatePods(t, harness.Members(ns, "late", 2, "1")...)
		ev := env.WaitEvent(t, ns, "late", "NotAdmitted", timeout)
		if ev.Note != "queue temp not found" {
			t.Errorf("NotAdmitted note = %q, want %q", ev.Note, "queue temp not found")
		}
		// Running work continues untouched.
		env.ConsistentlyBoundCount(t, ns, 2, quiet)
		env.WaitPodGroupPhase(t, ns, "running", v1alpha1.PodGroupRunning, timeout)

		env.CreateQueue(t, "temp", qapi.QueueSpec{Weight: 1})
		env.WaitBound(t, ns, timeout, "late-0", "late-1")
	})
}
