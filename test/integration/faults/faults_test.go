// Package faults_test stops the real scheduler at bad moments and checks that
// the next one finishes the job: a real kube-apiserver on an embedded etcd,
// the CRDs from manifests/crds, and the scheduler with the shipped
// configuration.
package faults_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 60 * time.Second

// TestSchedulerStoppedWhileMembersWaitInPermit stops the scheduler 10 times,
// each time while members of a gang hold nodes in Permit waiting for a
// sibling that cannot fit yet. The next scheduler, started once the sibling
// fits, must bind the whole gang; at the end no gang is partially bound and
// the nodes hold nothing but the bound pods (no reservation outlives its
// scheduler).
func TestSchedulerStoppedWhileMembersWaitInPermit(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	// Three 4-cpu nodes; each gang is 3 members of 3 cpu (one per node).
	nodes := env.AddNodes(t, 3, "4", "16Gi")
	const rounds, members = 10, 3
	for i := range rounds {
		// A 2-cpu blocker on one node leaves room for two members only:
		// they reserve and wait in Permit for the third.
		blocker := fmt.Sprintf("blocker-%d", i)
		env.CreatePod(t, harness.Pod(ns, blocker).CPU("2").Scheduler("default-scheduler").Obj())
		bindTo(t, env, ns, blocker, nodes[i%len(nodes)].Name)

		s := env.StartScheduler(t)
		gang := fmt.Sprintf("gang-%d", i)
		env.CreatePodGroup(t, harness.PodGroup(ns, gang, members, harness.PGTimeout(30)))
		env.CreatePods(t, harness.Members(ns, gang, members, "3")...)
		// Upstream marks a pod that will wait on Permit with its nominated
		// node: stop the scheduler as soon as one does.
		harness.WaitFor(t, timeout, func() (bool, error) {
			pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: v1alpha1.PodGroupLabel + "=" + gang})
			if err != nil {
				return false, err
			}
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					return false, fmt.Errorf("member %s bound while its gang cannot complete", p.Name)
				}
				if p.Status.NominatedNodeName != "" {
					return true, nil
				}
			}
			return false, nil
		}, "a member of "+gang+" waiting in Permit")
		s.Stop()
		if got := env.BoundPods(t, ns, v1alpha1.PodGroupLabel+"="+gang); got != 0 {
			t.Fatalf("round %d: %d members of %s bound after the scheduler stopped, want 0", i, got, gang)
		}

		// Room for the third member, and a new scheduler: the gang binds whole.
		deleteNow(t, env, ns, blocker)
		s2 := env.StartScheduler(t)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"="+gang, members, timeout)
		s2.Stop()
		// Free the nodes for the next round.
		env.DeleteGroup(t, ns, gang)
	}

	// Nothing held: a last scheduler places a pod as large as a whole node
	// on every node.
	env.StartScheduler(t)
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
