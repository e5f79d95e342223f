package autoscaler_test

import (
	"maps"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/disruption"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestScaleDown runs Karpenter's consolidation against running gangs, in
// an environment of its own: its NodePools must not take the pods of
// TestAutoscaler's scenarios.
func TestScaleDown(t *testing.T) {
	env := harness.Start(t)
	env.AddNodes(t, 1, staticCPU, "32Gi", harness.NodeNamePrefix("static"))
	env.StartScheduler(t, harness.WithConfigFile(filepath.Join(env.RepoRoot, "manifests", "components", "sole-scheduler", "config.yaml")))
	k := env.StartKarpenter(t, harness.KarpenterOptions{})
	scaleDownSparesRunningGangs(t, env, k)
}

// placedGang is a running gang with the filler pod that made Karpenter
// size its node large: deleting the filler leaves the node underutilized,
// which Karpenter's consolidation replaces with a smaller one, evicting
// whatever runs there.
type placedGang struct {
	ns, pool, node string
	members        map[string]string // name -> UID
}

// scaleDownSparesRunningGangs: Karpenter's consolidation never disrupts a
// running gang's members, and removes their node once the gang is gone.
// Two identical gangs, each in a NodePool of its own with a 10-cpu filler
// pod, get one 16-cpu node each; the fillers go, leaving both nodes 4/16
// used. The control gang's members opt out (karpenter.sh/do-not-disrupt:
// "false" in their template, which Caldera keeps): Karpenter replaces its
// node, evicting it, which proves it would consolidate both. The other
// gang's members carry the annotations Caldera wrote once they bound: its
// node and pods stay. Deleted, its pods leave an empty node that goes.
func scaleDownSparesRunningGangs(t *testing.T, env *harness.Env, k *harness.Karpenter) {
	for _, p := range []string{"protected", "control"} {
		k.CreateNodePool(t, harness.NodePoolOptions{Name: p, CPULimit: "32", ConsolidateAfter: 5 * time.Second})
	}
	protected := placeGangWithFiller(t, env, k, "protected", nil)
	control := placeGangWithFiller(t, env, k, "control", map[string]string{disruption.KarpenterDoNotDisrupt: "false"})
	for name := range protected.members {
		pod, err := env.Client.CoreV1().Pods(protected.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Annotations[disruption.KarpenterDoNotDisrupt] != "true" || pod.Annotations[disruption.ClusterAutoscalerSafeToEvict] != "false" {
			t.Errorf("running gang member %s annotated %v, want both scale-down protections", name, pod.Annotations)
		}
	}
	deleteFillers := time.Now()
	for _, g := range []placedGang{protected, control} {
		deletePod(t, env, g.ns, "filler")
	}
	harness.WaitFor(t, 150*time.Second, func() (bool, error) {
		return !hasNode(k.Nodes(t, control.pool), control.node), nil
	}, "Karpenter consolidating the control gang's underutilized node")
	t.Logf("fillers deleted -> the control gang's node %s consolidated: %v", control.node, time.Since(deleteFillers).Round(time.Millisecond))

	if !hasNode(k.Nodes(t, protected.pool), protected.node) {
		t.Fatalf("the protected gang's node %s was consolidated too", protected.node)
	}
	for name, uid := range protected.members {
		pod, err := env.Client.CoreV1().Pods(protected.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || string(pod.UID) != uid || pod.Spec.NodeName != protected.node || pod.DeletionTimestamp != nil {
			t.Fatalf("protected member %s disrupted: %v %+v", name, err, pod.ObjectMeta)
		}
	}
	gone := time.Now()
	for name := range protected.members {
		deletePod(t, env, protected.ns, name)
	}
	harness.WaitFor(t, 120*time.Second, func() (bool, error) {
		return !hasNode(k.Nodes(t, protected.pool), protected.node), nil
	}, "Karpenter removing the node the protected gang left")
	t.Logf("protected gang deleted -> its node removed: %v", time.Since(gone).Round(time.Millisecond))
}

// placeGangWithFiller creates, in a namespace of its own and on NodePool
// pool, a 2 x 2-cpu gang whose members carry annotations, with a 10-cpu
// default-scheduler filler, waits until all are bound on one Karpenter
// node, and returns where.
func placeGangWithFiller(t *testing.T, env *harness.Env, k *harness.Karpenter, pool string, annotations map[string]string) placedGang {
	t.Helper()
	ns := env.Namespace(t)
	onPool := map[string]string{"karpenter.sh/nodepool": pool}
	env.CreatePodGroup(t, harness.PodGroup(ns, "gang", 2))
	names := []string{"filler"}
	env.CreatePod(t, harness.Pod(ns, "filler").CPU("10").Scheduler(defaultScheduler).NodeSelector(onPool).Obj())
	g := placedGang{ns: ns, pool: pool, members: map[string]string{}}
	for _, m := range harness.Members(ns, "gang", 2, "2") {
		m.Spec.NodeSelector = onPool
		m.Annotations = maps.Clone(annotations)
		created := env.CreatePod(t, m)
		g.members[m.Name] = string(created.UID)
		names = append(names, m.Name)
	}
	bound := env.WaitBound(t, ns, 90*time.Second, names...)
	g.node = bound["filler"]
	for _, n := range names {
		if bound[n] != g.node {
			t.Fatalf("pool %s: pods spread over nodes %v, want one Karpenter node", pool, bound)
		}
	}
	if !hasNode(k.Nodes(t, pool), g.node) {
		t.Fatalf("pool %s: node %s is not Karpenter's", pool, g.node)
	}
	return g
}

func hasNode(nodes []v1.Node, name string) bool {
	for _, n := range nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}

func deletePod(t *testing.T, env *harness.Env, ns, name string) {
	t.Helper()
	err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil {
		t.Fatal(err)
	}
}
