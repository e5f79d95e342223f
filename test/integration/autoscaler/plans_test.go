package autoscaler_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// reclaimPlanBesideAutoscaler measures how a gang admitted on a reclaim
// plan meets the autoscaler. Queue plan-a holds the whole static node (four
// 2-cpu pods), over its share once plan-b's 2 x 2-cpu gang arrives: the
// gang is admitted on reclaiming 4 cpu from plan-a, its members fail
// Filter, CalderaReclaim evicts two of plan-a's pods and nominates the
// members there. The evictions, not a new node, make its room: the gang
// must bind on the static node, plan-a keep its share (2 pods), and the run
// reports how many NodeClaims Karpenter launched meanwhile (it skips pods
// that carry a nominated node; a member seen Unschedulable before its
// nomination may still start one).
func reclaimPlanBesideAutoscaler(t *testing.T, env *harness.Env, k *harness.Karpenter) {
	t.Run("a gang admitted on a reclaim plan binds on the room the evictions free", func(t *testing.T) {
		startEmpty(t, k)
		env.CreateQueue(t, "plan-a", qapi.QueueSpec{Weight: 1})
		env.CreateQueue(t, "plan-b", qapi.QueueSpec{Weight: 1})
		ns := env.Namespace(t)
		evicted := env.CountDeletions(t, ns)
		var running []string
		for i := range 4 {
			p := harness.Pod(ns, fmt.Sprint("a-", i)).CPU("2").Labels(map[string]string{qapi.QueueLabel: "plan-a"}).Obj()
			env.CreatePod(t, p)
			running = append(running, p.Name)
		}
		onStatic := env.WaitBound(t, ns, 30*time.Second, running...)
		members, created := createQueuedGang(t, env, ns, "b", "plan-b", 2, "2")
		bound := env.WaitBound(t, ns, 60*time.Second, members...)
		took := time.Since(created)
		harness.WaitDeletions(t, evicted, 2)
		static := onStatic[running[0]]
		for _, m := range members {
			if bound[m] != static {
				t.Errorf("member %s bound on %s, not on the room the evictions freed on %s", m, bound[m], static)
			}
		}
		if n := evicted(); n != 2 {
			t.Errorf("%d of plan-a's pods evicted, want 2 (plan-a keeps its share of 4 cpu)", n)
		}
		claims := k.NodeClaims(t, pool)
		t.Logf("gang admitted on a reclaim plan bound %v after creation, %d evictions; NodeClaims launched meanwhile: %d",
			took.Round(time.Millisecond), evicted(), len(claims))
		left, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: qapi.QueueLabel + "=plan-a"})
		if err != nil {
			t.Fatal(err)
		}
		kept := 0
		for _, p := range left.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != v1.PodFailed {
				kept++
			}
		}
		if kept != 2 {
			t.Errorf("plan-a runs %d pods, want its share of 2", kept)
		}
	})
}
