// Package upstream adapts Kubernetes' own gang API (scheduling.k8s.io/v1beta1
// PodGroup, feature gate GenericWorkload) to Caldera's one group model, and
// Caldera's decisions back to conditions on that PodGroup. The cache,
// admission, fair share, reclaim and placement never see an upstream type:
// an upstream PodGroup enters the cache as the same model object a
// scheduler-plugins PodGroup is, marked with upstream's apiVersion so that
// the status writer knows where to write. Upstream leaves queues and
// fairness out of scope on purpose; Caldera adds them. It holds no state and
// makes no API call. docs/gang-apis.md maps the fields.
package upstream

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	sched "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// APIVersion is upstream's scheduling API, which the model objects this
// package makes carry as their apiVersion.
var APIVersion = sched.SchemeGroupVersion.String()

// DisruptAllAnnotation marks a model PodGroup (never the API object) whose
// upstream PodGroup asks for disruptionMode all: reclaim and preemption
// take its running members together or not at all. The model has no field
// for it, and an annotation of Caldera's own group cannot collide with one
// a user sets, since the model's annotations are rebuilt from the object
// on every event.
const DisruptAllAnnotation = qapi.GroupName + "/upstream-disruption-all"

// GroupName returns the upstream PodGroup pod joins
// (spec.schedulingGroup.podGroupName), if it names one.
func GroupName(pod *v1.Pod) (string, bool) {
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return *sg.PodGroupName, true
	}
	return "", false
}

// IsUpstream reports whether a model PodGroup was made by PodGroup.
func IsUpstream(pg *v1alpha1.PodGroup) bool { return pg != nil && pg.APIVersion == APIVersion }

// DisruptsAll reports whether the model pg stands for an upstream PodGroup
// with disruptionMode all.
func DisruptsAll(pg *v1alpha1.PodGroup) bool {
	return IsUpstream(pg) && pg.Annotations[DisruptAllAnnotation] == "true"
}

// MinCount is the number of members that must be placed together: the
// gang policy's minCount, or 1 for the basic policy (and for a PodGroup
// naming neither, which validation does not admit), whose members are
// scheduled one by one.
func MinCount(in *sched.PodGroup) int32 {
	if g := in.Spec.SchedulingPolicy.Gang; g != nil {
		return g.MinCount
	}
	return 1
}

// PodGroup returns the model of an upstream PodGroup: metadata (labels and
// annotations copied, never shared; Caldera's queue label on the PodGroup
// names its queue, as on any PodGroup, else its namespace's default
// applies) and minMember from MinCount. A basic PodGroup becomes a group
// of minMember 1: admitted to its queue by its first member, with every
// further member an extra placed within the queue's share one by one
// (pkg/cache/extrademand.go), and no barrier. disruptionMode all sets
// DisruptAllAnnotation. priority and priorityClassName have no model field:
// the API server's priority admission sets the same class on the members,
// and Caldera orders and preempts by the members' priority.
func PodGroup(in *sched.PodGroup) *v1alpha1.PodGroup {
	out := &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: "PodGroup"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec:       v1alpha1.PodGroupSpec{MinMember: MinCount(in)},
	}
	out.ManagedFields = nil
	if d := in.Spec.DisruptionMode; d != nil && d.All != nil {
		out.Annotations = maps.Clone(out.Annotations)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[DisruptAllAnnotation] = "true"
	} else if _, set := out.Annotations[DisruptAllAnnotation]; set {
		// Only this function may say so: a user's copy is dropped.
		delete(out.Annotations, DisruptAllAnnotation)
	}
	return out
}

// Condition types Caldera writes on an upstream PodGroup, beside
// upstream's own (PodGroupInitiallyScheduled, DisruptionTarget), which it
// never writes: they are the scheduler's and the disruption controller's,
// and a Caldera-qualified type cannot be taken for one of them.
const (
	// ConditionAdmitted is True once the PodGroup's queue admitted it, False
	// with the admission check that refused it while it waits.
	ConditionAdmitted = qapi.GroupName + "/Admitted"
	// ConditionWaiting is True while an admitted gang waits for something
	// other than its queue (its members, a placement), False otherwise.
	ConditionWaiting = qapi.GroupName + "/Waiting"
)

// Reasons of the conditions Conditions writes.
const (
	ReasonAdmitted    = "Admitted"
	ReasonNotAdmitted = "NotAdmitted"
	ReasonWaiting     = "Waiting"
	ReasonPlaced      = "Placed"
)

// Progress is what Caldera's conditions on an upstream PodGroup are made
// from: the admission decision and what the gang still waits for.
type Progress struct {
	// Admitted: the gang is admitted to its queue.
	Admitted bool
	// Why says why it is not placed: admission's verdict before admission,
	// what it waits for after; "" when nothing stops it.
	Why string
}

// Conditions returns prev with Caldera's two conditions set from p; every
// other condition (upstream's among them) is kept as it is. A condition
// changes, with its lastTransitionTime, only when its status, reason or
// message does (meta.SetStatusCondition), so an unchanged gang is not
// written again.
func Conditions(prev []metav1.Condition, p Progress, generation int64, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, len(prev))
	for i := range prev {
		prev[i].DeepCopyInto(&out[i])
	}
	admitted := metav1.Condition{Type: ConditionAdmitted, Status: metav1.ConditionTrue, Reason: ReasonAdmitted,
		Message: "admitted to its queue", ObservedGeneration: generation, LastTransitionTime: now}
	waiting := metav1.Condition{Type: ConditionWaiting, Status: metav1.ConditionFalse, Reason: ReasonPlaced,
		Message: "nothing holds the gang", ObservedGeneration: generation, LastTransitionTime: now}
	switch {
	case !p.Admitted:
		admitted.Status, admitted.Reason, admitted.Message = metav1.ConditionFalse, ReasonNotAdmitted, orDefault(p.Why, "waiting for its queue")
		waiting.Status, waiting.Reason, waiting.Message = metav1.ConditionTrue, ReasonNotAdmitted, admitted.Message
	case p.Why != "":
		waiting.Status, waiting.Reason, waiting.Message = metav1.ConditionTrue, ReasonWaiting, p.Why
	}
	meta.SetStatusCondition(&out, admitted)
	meta.SetStatusCondition(&out, waiting)
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
