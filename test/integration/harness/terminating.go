package harness

import (
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// CountEvictions counts the pods of ns whose deletion starts from now on,
// once per pod, and returns the running count. Unlike CountDeletions it does
// not stand in for the kubelet: a bound pod deleted with a grace period stays
// terminating (the harness runs no kubelet to finish it) until the test calls
// FinishTerminating. Reclaim tests use it to see what the scheduler does
// while its victims are still on their nodes.
func (e *Env) CountEvictions(t *testing.T, ns string) func() int {
	t.Helper()
	w, err := e.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[types.UID]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || (ev.Type != watch.Deleted && p.DeletionTimestamp == nil) {
				continue
			}
			mu.Lock()
			seen[p.UID] = true
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
}

// FinishTerminating deletes for good (grace period 0) every pod of ns whose
// deletion started, as a kubelet does once the pod's containers stopped, and
// returns how many it finished.
func (e *Env) FinishTerminating(t *testing.T, ns string) int {
	t.Helper()
	pods, err := e.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods in %s: %v", ns, err)
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil {
			continue
		}
		err := e.Client.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("finishing the deletion of %s/%s: %v", ns, p.Name, err)
		}
		n++
	}
	return n
}

// RunningPods counts the pods of ns matching selector that are bound and not
// terminating: what a gang has running, as opposed to BoundPods, which also
// counts victims still on their nodes.
func (e *Env) RunningPods(t *testing.T, ns, selector string) int {
	t.Helper()
	return e.countPods(t, ns, selector, func(p *v1.Pod) bool { return p.Spec.NodeName != "" && p.DeletionTimestamp == nil })
}
