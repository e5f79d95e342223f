package harness

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// CountDeletions counts the pods of ns deleted from now on (evictions, in
// reclaim tests) and returns the running count. It also stands in for the
// kubelet, which the harness does not run: a pod left terminating (its
// deletion started but never finished, e.g. a victim whose DELETE the API
// server timed out as the scheduler that sent it was killed) is deleted for
// good, as a kubelet does once its containers stopped. Without that such a
// pod would stay forever, and upstream preemption waits for terminating
// victims before it evicts again for the same preemptor.
func (e *Env) CountDeletions(t *testing.T, ns string) func() int {
	t.Helper()
	w, err := e.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				mu.Lock()
				n++
				mu.Unlock()
			case watch.Modified:
				p, ok := ev.Object.(*v1.Pod)
				if !ok || p.DeletionTimestamp == nil {
					continue
				}
				// By UID: the event may arrive after the pod is gone and a
				// new one of the same name was created (a job submitted
				// again), which this must not delete.
				err := e.Client.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{
					GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID},
				})
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && t.Context().Err() == nil {
					t.Errorf("finishing the deletion of %s/%s: %v", ns, p.Name, err)
				}
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// WaitDeletions waits until deleted (a CountDeletions count) reaches at
// least want: a pod's deletion reaches the counting watch after a GET may
// already find it gone, and a preemptor may bind before the last of its
// victims' deletions arrives. The caller then checks there are no more.
func WaitDeletions(t *testing.T, deleted func() int, want int) {
	t.Helper()
	WaitFor(t, 10*time.Second, func() (bool, error) { return deleted() >= want, nil },
		fmt.Sprintf("%d deletions to reach the watch", want))
}
