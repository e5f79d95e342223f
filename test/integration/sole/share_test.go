package sole_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// Fair share divides what the queues can have, not the room pods outside
// every queue hold: the same scenario with those pods bound by the sole
// configuration's default-scheduler profile (same process, same cache) and
// by a real upstream kube-scheduler beside Caldera (another process, as in
// a cluster where Caldera is the second scheduler).

// TestSoleShareExcludesDefaultPods: the pods outside the queues are the
// sole configuration's default-scheduler profile's.
func TestSoleShareExcludesDefaultPods(t *testing.T) {
	env := harness.Start(t)
	nodes := env.AddNodes(t, 10, "10", "40Gi")
	env.StartScheduler(t, harness.WithConfigFile(soleConfig(env)))
	shareExcludesOutside(t, env, nodes)
}

// TestShareExcludesAnotherSchedulersPods: the pods outside the queues are
// bound by upstream's kube-scheduler, a process of its own, while Caldera
// runs its shipped configuration.
func TestShareExcludesAnotherSchedulersPods(t *testing.T) {
	env := harness.Start(t)
	nodes := env.AddNodes(t, 10, "10", "40Gi")
	env.StartUpstreamScheduler(t)
	env.StartScheduler(t)
	shareExcludesOutside(t, env, nodes)
}

// shareExcludesOutside: 100 cpu; 50 held by default-scheduler pods; queue a
// runs 50 and wants 10 more; queue b submits a 20-cpu gang. Dividing all
// 100, a would deserve 60, nothing would be reclaimable and b would wait
// for a's pods to end. Dividing the 50 the queues can have, a deserves 30
// and b 20: b's gang is admitted on a reclaim plan that evicts two of a's
// pods and binds, a's extra pod keeps waiting, and no default-scheduler
// pod is ever a victim.
func shareExcludesOutside(t *testing.T, env *harness.Env, nodes []*v1.Node) {
	t.Helper()
	env.CreateQueue(t, "a", qapi.QueueSpec{Weight: 1})
	env.CreateQueue(t, "b", qapi.QueueSpec{Weight: 1})
	ns := env.Namespace(t)
	var web, running []string
	for i, n := range nodes[:5] {
		p := defaultPod(ns, fmt.Sprint("web-", i), "10")
		p.Spec.NodeSelector = map[string]string{v1.LabelHostname: n.Name}
		env.CreatePod(t, p)
		web = append(web, p.Name)
	}
	env.WaitBound(t, ns, timeout, web...)
	inA := map[string]string{qapi.QueueLabel: "a"}
	for i := range 5 {
		p := env.CreatePod(t, harness.Pod(ns, fmt.Sprint("a-", i)).CPU("10").Labels(inA).Obj())
		running = append(running, p.Name)
	}
	env.WaitBound(t, ns, timeout, running...)
	env.CreatePod(t, harness.Pod(ns, "a-more").CPU("10").Labels(inA).Obj())

	pg := harness.PodGroup(ns, "b", 2)
	pg.Labels = map[string]string{qapi.QueueLabel: "b"}
	env.CreatePodGroup(t, pg)
	var members []string
	for _, m := range harness.Members(ns, "b", 2, "10") {
		env.CreatePod(t, m)
		members = append(members, m.Name)
	}
	env.WaitBound(t, ns, timeout, members...)

	left := 0
	for _, name := range running {
		if _, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{}); err == nil {
			left++
		}
	}
	if left != 3 {
		t.Errorf("queue a runs %d of its 5 pods after b's gang bound, want 3 (its share: 30 of the 50 cpu the queues can have)", left)
	}
	for _, name := range web {
		pod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || pod.DeletionTimestamp != nil {
			t.Errorf("default-scheduler pod %s was disturbed: %v", name, err)
		}
	}
	more, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), "a-more", metav1.GetOptions{})
	if err != nil || more.Spec.NodeName != "" {
		t.Errorf("a's extra pod, above a's share, was placed: %v %q", err, more.Spec.NodeName)
	}
}
