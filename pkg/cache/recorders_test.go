package cache

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Every profile has its own Event recorder (its reportingController is the
// profile's name); an Event about a pod or a gang is reported by the profile
// that schedules it, whichever profile's plugin built the cache.
func TestEventsReportedByTheirProfile(t *testing.T) {
	a, b := newFakeHandle(), newFakeHandle()
	a.profile, b.profile = "batch-a", "batch-b"
	c := newEmpty(t.Context(), a)
	c.profiles.addRecorder(a)
	c.profiles.addRecorder(b)
	c.profiles.addRecorder(b) // every plugin of a profile passes through Get

	pod := func(name, sched string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PodSpec{SchedulerName: sched}}
	}
	notice := gang.Notice{Reason: "Unschedulable", Message: "m", Warning: true}
	pg := &groupspec.Source{Dialect: groupspec.SchedulerPlugins, Namespace: "ns", Name: "g"}
	// The status writer posts each group's notice with the recorder the
	// cache names.
	status.New(c, status.Clients{}).WriteGroups(t.Context(), []status.Group{
		{Pods: []*v1.Pod{pod("of-b", "batch-b")}, Notice: notice},
		{Source: pg, Profile: "batch-b", Notice: notice},
		{Pods: []*v1.Pod{pod("of-a", "batch-a")}, Notice: notice},
		// A pod of no Caldera profile (or a PodGroup with no member yet):
		// the profile that built the cache.
		{Pods: []*v1.Pod{pod("other", "default-scheduler")}, Notice: notice},
		{Source: pg, Notice: notice},
	})

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
