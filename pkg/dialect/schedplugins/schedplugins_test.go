package schedplugins

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/resources"
)

var created = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func TestSpec(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       v1alpha1.PodGroup
		queue    string
		minRes   resources.List
		admitted bool
	}{
		{name: "bare", in: v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{MinMember: 3}}},
		{name: "queue label and minResources",
			in: v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{qapi.QueueLabel: "team"}},
				Spec: v1alpha1.PodGroupSpec{MinMember: 3, MinResources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}}},
			queue: "team", minRes: resources.List{resources.CPU: 1500}},
		{name: "admitted-at of this object",
			in:       v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{qapi.AdmittedAtAnnotation: "2026-01-02T03:04:05Z"}}},
			admitted: true},
		{name: "admitted-at of an earlier object of the name (copied YAML)",
			in: v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{qapi.AdmittedAtAnnotation: "2026-01-01T00:00:00Z"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.DeepCopy()
			in.Namespace, in.Name, in.UID, in.ResourceVersion, in.CreationTimestamp = "ns", "g", "u", "4", created
			in.Spec.ScheduleTimeoutSeconds = ptr.To[int32](9)
			got := Spec(in)
			want := groupspec.Source{Dialect: groupspec.SchedulerPlugins, APIVersion: "scheduling.x-k8s.io/v1alpha1",
				Namespace: "ns", Name: "g", UID: "u", ResourceVersion: "4", Created: created.Time}
			if got.Source != want {
				t.Errorf("source = %+v, want %+v", got.Source, want)
			}
			if got.Gang.MinMember != in.Spec.MinMember || *got.Gang.ScheduleTimeoutSeconds != 9 {
				t.Errorf("gang spec = %+v", got.Gang)
			}
			if !got.Gang.MinResources.Equal(tc.minRes) || (got.Gang.MinResources == nil) != (tc.minRes == nil) {
				t.Errorf("minResources = %v, want %v", got.Gang.MinResources, tc.minRes)
			}
			if got.Queue != tc.queue || got.Admitted != tc.admitted || got.Rules != (groupspec.Rules{}) {
				t.Errorf("queue %q, admitted %v, rules %+v; want %q, %v, none", got.Queue, got.Admitted, got.Rules, tc.queue, tc.admitted)
			}
		})
	}
}

// Status sets the phase and counts Caldera owns, scheduleStartTime once at
// the first attempt (whole seconds), and keeps what others set.
func TestStatus(t *testing.T) {
	first := time.Date(2026, 1, 2, 3, 4, 5, 600e6, time.UTC)
	p := groupspec.Progress{Phase: gang.PhaseRunning, Running: 2, Succeeded: 1, Failed: 1, FirstAttempt: first}
	got := Status(v1alpha1.PodGroupStatus{OccupiedBy: "ns/job"}, p)
	if got.Phase != v1alpha1.PodGroupRunning || got.Running != 2 || got.Succeeded != 1 || got.Failed != 1 || got.OccupiedBy != "ns/job" {
		t.Errorf("status = %+v", got)
	}
	if want := first.Truncate(time.Second); !got.ScheduleStartTime.Time.Equal(want) {
		t.Errorf("scheduleStartTime = %v, want %v", got.ScheduleStartTime, want)
	}
	theirs := metav1.NewTime(first.Add(-time.Hour))
	if again := Status(v1alpha1.PodGroupStatus{ScheduleStartTime: theirs}, p); !again.ScheduleStartTime.Equal(&theirs) {
		t.Errorf("a scheduleStartTime set before was replaced: %v", again.ScheduleStartTime)
	}
	if none := Status(v1alpha1.PodGroupStatus{}, groupspec.Progress{Phase: gang.PhasePending}); !none.ScheduleStartTime.IsZero() {
		t.Errorf("scheduleStartTime set before any attempt")
	}
}
