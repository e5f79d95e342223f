// Package schedplugins adapts scheduler-plugins' gang API
// (scheduling.x-k8s.io/v1alpha1 PodGroup, also what Caldera creates for
// gangs asked for by annotation) to Caldera's group spec (pkg/groupspec),
// and Caldera's view of a gang back to that PodGroup's status. It holds no
// state and makes no API call. docs/gang-apis.md maps the fields.
package schedplugins

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// APIVersion is scheduler-plugins' scheduling API. Its informer's objects
// carry no apiVersion, so Spec sets it.
var APIVersion = v1alpha1.SchemeGroupVersion.String()

// Spec reads a scheduler-plugins PodGroup as Caldera's group spec:
// minMember, minResources and scheduleTimeoutSeconds as they are; the
// queue from Caldera's queue label; admitted when Caldera's admitted-at
// annotation of this object says so. The members exist before the group
// is admitted (their pods are created by the user's controller whatever
// the scheduler says), so no rule applies.
func Spec(in *v1alpha1.PodGroup) *groupspec.Spec {
	out := &groupspec.Spec{
		Source: groupspec.Source{
			Dialect: groupspec.SchedulerPlugins, APIVersion: APIVersion,
			Namespace: in.Namespace, Name: in.Name, UID: string(in.UID),
			ResourceVersion: in.ResourceVersion, Created: in.CreationTimestamp.Time,
		},
		Gang:        gang.Spec{MinMember: in.Spec.MinMember, ScheduleTimeoutSeconds: in.Spec.ScheduleTimeoutSeconds},
		Queue:       in.Labels[qapi.QueueLabel],
		Admitted:    qapi.AdmittedSince(in.Annotations, in.CreationTimestamp.Time),
		Annotations: in.Annotations,
	}
	if in.Spec.MinResources != nil {
		out.Gang.MinResources = convert.Resources(in.Spec.MinResources)
	}
	return out
}

// Status returns the status a PodGroup whose status is prev should have:
// scheduler-plugins' phase and member counts from p, and
// scheduleStartTime set once, at the first attempt (whole seconds, as the
// API stores them, so that the next comparison is equal). Fields Caldera
// does not own (occupiedBy) stay as they are.
func Status(prev v1alpha1.PodGroupStatus, p groupspec.Progress) v1alpha1.PodGroupStatus {
	s := *prev.DeepCopy()
	s.Phase = v1alpha1.PodGroupPhase(p.Phase)
	s.Running = int32(p.Running)
	s.Succeeded = int32(p.Succeeded)
	s.Failed = int32(p.Failed)
	if s.ScheduleStartTime.IsZero() && !p.FirstAttempt.IsZero() {
		s.ScheduleStartTime = metav1.NewTime(p.FirstAttempt.Truncate(time.Second))
	}
	return s
}
