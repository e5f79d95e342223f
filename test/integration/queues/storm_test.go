package queues_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// backlog is the size: a queue holding back a thousand pods.
const backlog = 1000

// TestNoVerdictWriteStorm: a thousand pods held back by their queue's
// capability while the queue's running pods finish one by one. Every
// completion moves the verdict's numbers ("remaining capability 0", then
// 1, then 0 again as a pod is admitted); written at each change, every
// waiting pod's condition would be rewritten per completion, a thousand
// writes each time, competing with binds for the scheduler's API budget.
// Each pod's condition is written once (the first verdict), and again only
// when its check changes or after VerdictRefresh.
func TestNoVerdictWriteStorm(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	env.AddNodes(t, 1, "64", "64Gi")
	env.CreateQueue(t, "storm", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}})
	inQueue := map[string]string{qapi.QueueLabel: "storm"}
	env.StartScheduler(t)
	var workers []string
	for i := range 8 {
		name := fmt.Sprintf("worker-%d", i)
		env.CreatePod(t, harness.Pod(ns, name).CPU("1").Labels(inQueue).Obj())
		workers = append(workers, name)
	}
	env.WaitBound(t, ns, timeout, workers...)

	// Count every change of a waiting pod's PodScheduled condition.
	w, err := env.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	writes := map[string]int{}
	last := map[string]string{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			c := scheduledCondition(p)
			if c == nil || c.Reason != status.ReasonWaitingForAdmission {
				continue
			}
			mu.Lock()
			if s := c.Reason + c.Message; last[p.Name] != s {
				last[p.Name] = s
				writes[p.Name]++
			}
			mu.Unlock()
		}
	}()
	for i := range backlog {
		env.CreatePod(t, harness.Pod(ns, fmt.Sprintf("wait-%04d", i)).CPU("2").Labels(inQueue).Obj())
	}
	told := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(writes)
	}
	harness.WaitFor(t, 2*time.Minute, func() (bool, error) { return told() >= backlog, nil }, fmt.Sprintf("every one of the %d waiting pods to be told its verdict", backlog))

	// The queue's pods finish one by one; each completion changes the
	// numbers of every waiting pod's verdict, and every second one admits
	// a waiting pod.
	for _, name := range workers {
		if err := env.Client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // the pace of completions, not a wait for a condition
	}
	env.ConsistentlyUnbound(t, ns, 3*time.Second, "wait-0999")

	mu.Lock()
	defer mu.Unlock()
	total, most := 0, 0
	for _, n := range writes {
		total += n
		most = max(most, n)
	}
	t.Logf("%d verdict writes to %d waiting pods over %d completions (at most %d to one pod)", total, len(writes), len(workers), most)
	// One write per pod for its verdict; a few more for pods admitted in
	// the meantime or re-told at a change of check.
	if total > backlog+backlog/10 {
		t.Errorf("%d verdict writes for %d waiting pods: the numbers of a standing verdict were rewritten", total, backlog)
	}
}
