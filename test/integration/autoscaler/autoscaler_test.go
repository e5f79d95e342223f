// Package autoscaler_test runs Caldera with a real cluster autoscaler in
// the loop: Karpenter's KWOK cloud provider (harness.StartKarpenter), whose
// nodes the KWOK controller makes Ready, against the real kube-apiserver
// and Caldera's scheduler on the shipped sole-scheduler configuration.
//
// An autoscaler reacts to pods the scheduler tried and marked
// PodScheduled=False/Unschedulable: Karpenter simulates them onto its
// instance types, launches NodeClaims, and removes nodes that have become
// empty (consolidation).
package autoscaler_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	// defaultScheduler is the sole-scheduler configuration's profile of
	// upstream's defaults: no queue admission, no gangs.
	defaultScheduler = "default-scheduler"
	// staticCPU is the CPU of the one node the cluster starts with (not
	// Karpenter's, so never consolidated).
	staticCPU = "8"
	// pool is the NodePool every scenario shares.
	pool = "default"
)

func TestAutoscaler(t *testing.T) {
	env := harness.Start(t)
	env.AddNodes(t, 1, staticCPU, "32Gi", harness.NodeNamePrefix("static"))
	env.StartScheduler(t, harness.WithConfigFile(filepath.Join(env.RepoRoot, "manifests", "components", "sole-scheduler", "config.yaml")))
	began := time.Now()
	k := env.StartKarpenter(t, harness.KarpenterOptions{})
	k.CreateNodePool(t, harness.NodePoolOptions{Name: pool, CPULimit: "64", ConsolidateAfter: 5 * time.Second})
	t.Logf("Karpenter and KWOK ready, NodePool %s Ready, in %v", pool, time.Since(began).Round(time.Millisecond))

	// A plain pod larger than the free room: the default-scheduler profile
	// tries it and marks it Unschedulable, Karpenter launches one node for
	// it, KWOK makes the node Ready, Karpenter lifts its unregistered taint
	// and the pod binds there. Deleted, it leaves the node empty and
	// Karpenter consolidates the node away.
	t.Run("a pending pod gets a node, which goes when the pod does", func(t *testing.T) {
		ns := env.Namespace(t)
		created := time.Now()
		pod := env.CreatePod(t, harness.Pod(ns, "big").CPU("10").Scheduler(defaultScheduler).Obj())
		env.WaitUnschedulable(t, ns, pod.Name, 30*time.Second)
		unschedulable := time.Since(created)

		var nodeSeen, nodeReady time.Duration
		harness.WaitFor(t, 60*time.Second, func() (bool, error) {
			nodes := k.Nodes(t, pool)
			if len(nodes) > 0 && nodeSeen == 0 {
				nodeSeen = time.Since(created)
			}
			if len(nodes) > 0 && harness.NodeReady(&nodes[0]) {
				nodeReady = time.Since(created)
				return true, nil
			}
			return false, nil
		}, "a Ready, initialized node from Karpenter")
		bound := env.WaitBound(t, ns, 30*time.Second, pod.Name)
		toBind := time.Since(created)

		nodes := k.Nodes(t, pool)
		claims := k.NodeClaims(t, pool)
		if len(nodes) != 1 || len(claims) != 1 {
			t.Fatalf("want 1 node and 1 NodeClaim from Karpenter, got %d nodes %v and %d NodeClaims", len(nodes), names(nodes), len(claims))
		}
		if bound[pod.Name] != nodes[0].Name {
			t.Fatalf("pod bound to %s, not to Karpenter's node %s", bound[pod.Name], nodes[0].Name)
		}
		it := nodes[0].Labels[v1.LabelInstanceTypeStable]
		t.Logf("creation -> Unschedulable %v, -> node created %v, -> node Ready/untainted %v, -> bound %v; nodes created: %d (%s)",
			unschedulable.Round(time.Millisecond), nodeSeen.Round(time.Millisecond), nodeReady.Round(time.Millisecond),
			toBind.Round(time.Millisecond), len(nodes), it)

		deleted := time.Now()
		if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		k.WaitNoNodes(t, pool, 90*time.Second)
		t.Logf("pod deleted -> node removed by consolidation: %v", time.Since(deleted).Round(time.Millisecond))
	})

	// A gang (and, with admitSingletons, a lone pod of a Caldera profile)
	// that the cluster has no room for is refused admission for capacity:
	// its pods run scheduling cycles that mark them Unschedulable, which
	// Karpenter acts on, while the gang holds nothing until admitted.

	// A gang of four 6-CPU members with one 8-CPU node: the node holds one
	// member, so all four must bind after one scale-up that creates exactly
	// the nodes needed: every node Karpenter creates hosts a member, and
	// every NodeClaim comes from one provisioning batch.
	t.Run("a gang larger than the cluster binds after one scale-up", func(t *testing.T) {
		startEmpty(t, k)
		ns := env.Namespace(t)
		env.CreatePodGroup(t, harness.PodGroup(ns, "gang", 4))
		created := time.Now()
		var members []string
		for _, m := range harness.Members(ns, "gang", 4, "6") {
			env.CreatePod(t, m)
			members = append(members, m.Name)
		}
		bound := env.WaitBound(t, ns, gangTimeout, members...)
		t.Logf("gang of 4 bound %v after creation", time.Since(created).Round(time.Millisecond))
		assertExactScaleUp(t, k, bound)
	})

	// A lone 10-CPU pod of Caldera's own profile (a group of one under
	// admitSingletons) on the 8-CPU node: it must get a node as the
	// default-scheduler pod above did.
	t.Run("a Caldera singleton larger than the cluster gets a node", func(t *testing.T) {
		startEmpty(t, k)
		ns := env.Namespace(t)
		created := time.Now()
		pod := env.CreatePod(t, harness.Pod(ns, "single").CPU("10").Obj())
		bound := env.WaitBound(t, ns, gangTimeout, pod.Name)
		t.Logf("Caldera singleton bound %v after creation", time.Since(created).Round(time.Millisecond))
		assertExactScaleUp(t, k, bound)
	})

	capabilityBlockedGang(t, env, k, "8")
	capabilityBlockedGang(t, env, k, "12")
	fairOrderForNewRoom(t, env, k)
	reclaimPlanBesideAutoscaler(t, env, k)
	reservedGangGetsANode(t, env, k)
}

// startEmpty fails t unless Karpenter has no node now, and makes t's
// cleanup, after the namespace's (so after its pods are gone), wait until
// Karpenter has consolidated away every node it made, so that the next
// scenario starts from the static node alone.
func startEmpty(t *testing.T, k *harness.Karpenter) {
	t.Helper()
	if nodes := k.Nodes(t, pool); len(nodes) != 0 {
		t.Fatalf("Karpenter's nodes %v left over from an earlier scenario", names(nodes))
	}
	t.Cleanup(func() { k.WaitNoNodes(t, pool, 90*time.Second) })
}

// assertExactScaleUp checks that Karpenter's nodes are exactly those the
// bound pods needed: each hosts one of them, one NodeClaim per node, all
// launched in one provisioning batch.
func assertExactScaleUp(t *testing.T, k *harness.Karpenter, bound map[string]string) {
	t.Helper()
	nodes := k.Nodes(t, pool)
	claims := k.NodeClaims(t, pool)
	var used []string
	for _, n := range bound {
		used = append(used, n)
	}
	var types []string
	for _, n := range nodes {
		types = append(types, n.Labels[v1.LabelInstanceTypeStable])
		if !slices.Contains(used, n.Name) {
			t.Errorf("Karpenter's node %s (%s) hosts none of the pods", n.Name, n.Labels[v1.LabelInstanceTypeStable])
		}
	}
	if len(claims) != len(nodes) {
		t.Errorf("%d NodeClaims for %d nodes: Karpenter launched more than it registered", len(claims), len(nodes))
	}
	var first, last time.Time
	for _, c := range claims {
		ts := c.GetCreationTimestamp().Time
		if first.IsZero() || ts.Before(first) {
			first = ts
		}
		if ts.After(last) {
			last = ts
		}
	}
	// One batch: Karpenter gathers pending pods for at most
	// BatchMaxDuration (3 s here) and launches their claims together.
	if span := last.Sub(first); span > 10*time.Second {
		t.Errorf("NodeClaims created over %v: more than one scale-up", span)
	}
	t.Logf("nodes created: %d %v", len(nodes), types)
}

// names are the nodes' names.
func names(nodes []v1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}
