// Package placement_test runs CalderaGangPlacement and the two shipped
// profiles end to end: a real kube-apiserver on an embedded etcd, the CRDs
// from manifests/crds, and the real scheduler with
// manifests/scheduler/config.yaml. Nodes are labelled into racks.
package placement_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout  = 60 * time.Second
	rackKey  = "topology.caldera.dev/rack"
	batch    = harness.DefaultSchedulerName
	spread   = "caldera-scheduler-spread"
	perRack  = 3
	nodeCPUs = "4"
)

func TestPlacement(t *testing.T) {
	env := harness.Start(t)

	// racks adds n racks of perRack 4-cpu nodes and returns node -> rack.
	seq := 0
	racks := func(t *testing.T, n int) map[string]string {
		t.Helper()
		out := map[string]string{}
		for range n {
			seq++
			rack := fmt.Sprintf("rack-%d", seq)
			for _, node := range env.AddNodes(t, perRack, nodeCPUs, "16Gi", harness.NodeLabels(map[string]string{rackKey: rack})) {
				out[node.Name] = rack
			}
		}
		return out
	}
	// gang creates a PodGroup of n 1-cpu members for scheduler.
	gang := func(t *testing.T, ns, name string, n int, scheduler string) {
		t.Helper()
		env.CreatePodGroup(t, harness.PodGroup(ns, name, int32(n)))
		for _, m := range harness.Members(ns, name, n, "1") {
			m.Spec.SchedulerName = scheduler
			env.CreatePod(t, m)
		}
	}
	// racksOf returns the racks the bound members of gang name use.
	racksOf := func(t *testing.T, ns, name string, rackOf map[string]string) map[string]int {
		t.Helper()
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: v1alpha1.PodGroupLabel + "=" + name})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, p := range pods.Items {
			out[rackOf[p.Spec.NodeName]]++
		}
		return out
	}

	t.Run("a gang that fits in one rack lands in one rack", func(t *testing.T) {
		ns := env.Namespace(t)
		rackOf := racks(t, 3)
		env.StartScheduler(t)
		// 8 members of 1 cpu; a rack has 12 cpu.
		gang(t, ns, "fits", 8, batch)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=fits", 8, timeout)
		if used := racksOf(t, ns, "fits", rackOf); len(used) != 1 {
			t.Fatalf("the gang uses racks %v, want one", used)
		}
		// The same gang through the spread profile (no placement score,
		// LeastAllocated) takes an empty node per member: every rack.
		gang(t, ns, "spread", 8, spread)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=spread", 8, timeout)
		if used := racksOf(t, ns, "spread", rackOf); len(used) < 2 {
			t.Fatalf("through %s the gang uses racks %v, want it spread over several", spread, used)
		}
	})

	t.Run("a gang bigger than any rack spans the fewest racks", func(t *testing.T) {
		ns := env.Namespace(t)
		rackOf := racks(t, 3)
		env.StartScheduler(t)
		// 16 members of 1 cpu; a rack has 12: two racks at least.
		gang(t, ns, "big", 16, batch)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=big", 16, timeout)
		if used := racksOf(t, ns, "big", rackOf); len(used) != 2 {
			t.Fatalf("the gang uses racks %v, want exactly two", used)
		}
	})

	t.Run("both profiles share the nodes without double-booking", func(t *testing.T) {
		ns := env.Namespace(t)
		nodes := racks(t, 2) // 6 nodes, 24 cpu
		env.StartScheduler(t)
		// Exactly fill the cluster from both profiles at once: two gangs
		// and singletons each.
		gang(t, ns, "batch-gang", 6, batch)
		gang(t, ns, "spread-gang", 6, spread)
		for i := range 6 {
			env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("batch-%d", i)).CPU("1").Obj())
			env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("spread-%d", i)).CPU("1").Scheduler(spread).Obj())
		}
		env.WaitBoundCount(t, ns, "", 24, timeout)
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]int64{}
		for _, p := range pods.Items {
			used[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		}
		capacity := resource.MustParse(nodeCPUs)
		for node := range nodes {
			if used[node] > capacity.MilliValue() {
				t.Errorf("node %s holds %dm cpu of %s: double-booked", node, used[node], nodeCPUs)
			}
		}
		// One more pod in either profile has no room: it waits, nothing is
		// bound past capacity.
		env.CreatePod(t, harness.Pod(ns, "extra").CPU("1").Scheduler(spread).Obj())
		env.ConsistentlyUnbound(t, ns, 5*time.Second, "extra")
	})
}
