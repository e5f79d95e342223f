package cache

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/gang"
)

// Every profile has its own Event recorder (its reportingController is the
// profile's name); an Event about a pod or a gang is reported by the profile
// that schedules it, whichever profile's plugin built the cache.
func TestEventsReportedByTheirProfile(t *testing.T) {
	a, b := newFakeHandle(), newFakeHandle()
	a.profile, b.profile = "batch-a", "batch-b"
	c := newEmpty(t.Context(), a)
	c.addProfile(a)
	c.addProfile(b)
	c.addProfile(b) // every plugin of a profile passes through Get

	pod := func(name, sched string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PodSpec{SchedulerName: sched}}
	}
	notice := gang.Notice{Reason: "Unschedulable", Message: "m", Warning: true}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}}
	c.emit(statusWork{pods: []*v1.Pod{pod("of-b", "batch-b")}, notice: notice})
	c.emit(statusWork{pg: pg, profile: "batch-b", notice: notice})
	c.emit(statusWork{pods: []*v1.Pod{pod("of-a", "batch-a")}, notice: notice})
	// A pod of no Caldera profile (or a PodGroup with no member yet): the
	// profile that built the cache.
	c.emit(statusWork{pods: []*v1.Pod{pod("other", "default-scheduler")}, notice: notice})
	c.emit(statusWork{pg: pg, notice: notice})

	names := func(evs []recordedEvent) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.kind+" "+e.name)
		}
		return out
	}
	if got, want := names(b.recorded()), []string{"Pod ns/of-b", "PodGroup ns/g"}; !slices.Equal(got, want) {
		t.Errorf("batch-b recorded %v, want %v", got, want)
	}
	if got, want := names(a.recorded()), []string{"Pod ns/of-a", "Pod ns/other", "PodGroup ns/g"}; !slices.Equal(got, want) {
		t.Errorf("batch-a recorded %v, want %v", got, want)
	}
}
