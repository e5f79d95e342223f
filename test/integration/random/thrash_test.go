package random_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// TestBindBetweenChecksEndsAllUnder: the no-thrash rule judges an eviction
// by whether every queue was under its share. A gang that binds between two
// checks and takes its parent queue over its share makes a reclaim right
// after it fair; the watcher must not keep the earlier check's "all under".
// A bind that stays under the share leaves it.
func TestBindBetweenChecksEndsAllUnder(t *testing.T) {
	since := time.Now().Add(-10 * time.Second)
	queues := []qapi.Queue{
		{ObjectMeta: metav1.ObjectMeta{Name: "parent"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "child"}, Spec: qapi.QueueSpec{Parent: "parent"}},
	}
	w := &watcher{
		last:          &snapshot{Queues: queues},
		allUnderSince: since,
		lastViews: map[string]queueView{
			"parent": {Holding: 16000, DeservedLo: 49000},
			"child":  {Holding: 16000, DeservedLo: 60000},
		},
	}
	pod := func(cpu string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{qapi.QueueLabel: "child"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)},
			}}}},
		}
	}

	w.seeBind(pod("8"))
	if !w.allUnderSince.Equal(since) {
		t.Fatalf("a bind to 24 of 49 cpu ended all-under (since %v)", w.allUnderSince)
	}
	for range 4 {
		w.seeBind(pod("8"))
	}
	if !w.allUnderSince.IsZero() {
		t.Errorf("binds to 56 of the parent's 49 cpu left all-under since %v", w.allUnderSince)
	}
}
