// Package volcano adapts Volcano's gang API (scheduling.volcano.sh/v1beta1
// PodGroup and Queue) to Caldera's one group and queue model, and Caldera's
// decisions back to the status Volcano's tools read. The cache, admission,
// fair share, reclaim and placement never see a Volcano type: a Volcano
// PodGroup enters the cache as the same model object a scheduler-plugins
// PodGroup is (marked with Volcano's apiVersion, so that the status writer
// knows where to write), a Volcano Queue as a Caldera Queue. It holds no
// state and makes no API call. docs/gang-apis.md maps the fields.
package volcano

import (
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// APIVersion is Volcano's scheduling API, which the model objects this
// package makes carry as their apiVersion.
var APIVersion = vc.SchemeGroupVersion.String()

// Pods join a Volcano PodGroup by one of these annotations (Volcano's job
// controller sets the first; the second is Volcano's own spelling).
const (
	GroupNameAnnotation        = vc.KubeGroupNameAnnotationKey
	VolcanoGroupNameAnnotation = vc.VolcanoGroupNameAnnotationKey
)

// DefaultQueue is the queue Volcano's webhook gives a job that names none,
// and which volcano-scheduler creates when it starts.
const DefaultQueue = "default"

// RootQueue is the queue Volcano makes the root of its queue tree: its
// children are Caldera's top-level queues, and it is not a queue of its
// own.
const RootQueue = "root"

// GroupName returns the Volcano PodGroup pod joins, if it names one.
func GroupName(pod *v1.Pod) (string, bool) {
	if n := pod.Annotations[GroupNameAnnotation]; n != "" {
		return n, true
	}
	if n := pod.Annotations[VolcanoGroupNameAnnotation]; n != "" {
		return n, true
	}
	return "", false
}

// IsVolcano reports whether a model PodGroup was made by PodGroup.
func IsVolcano(pg *v1alpha1.PodGroup) bool { return pg != nil && pg.APIVersion == APIVersion }

// Started reports whether the Volcano PodGroup whose model is pg has
// started (Running, Unknown or Completed): its members were created and
// allocated once, so one with no member left is done, not about to begin.
func Started(pg *v1alpha1.PodGroup) bool {
	switch vc.PodGroupPhase(pg.Status.Phase) {
	case vc.PodGroupRunning, vc.PodGroupUnknown, vc.PodGroupCompleted:
		return true
	}
	return false
}

// IsVolcanoQueue reports whether a model Queue was made by Queue.
func IsVolcanoQueue(q *qapi.Queue) bool { return q != nil && q.APIVersion == APIVersion }

// admittedPhase reports whether a PodGroup in phase p was admitted: Volcano
// (or an earlier Caldera) let its controller create its pods.
func admittedPhase(p vc.PodGroupPhase) bool {
	switch p {
	case vc.PodGroupInqueue, vc.PodGroupRunning, vc.PodGroupUnknown, vc.PodGroupCompleted:
		return true
	}
	return false
}

// PodGroup returns the model of a Volcano PodGroup: metadata (labels and
// annotations copied, never shared), minMember, minResources as Volcano's
// scheduler reads them (MinResources); spec.queue as
// Caldera's queue label unless the object carries that label itself; and,
// for a PodGroup whose phase says it was admitted (Inqueue or later), the
// admitted-at annotation at its creation time, so that a restarted
// scheduler keeps the admission instead of deciding it again past
// capacity. minTaskMember and priorityClassName have no model field
// (docs/gang-apis.md): members carry their priority, and minTaskMember is
// not enforced. The model's status holds Volcano's phase (as a string of
// the model's phase type) and counts, for reading only: the cache writes
// Volcano's status from its own counts (Status).
func PodGroup(in *vc.PodGroup) *v1alpha1.PodGroup {
	out := &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: "PodGroup"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec:       v1alpha1.PodGroupSpec{MinMember: in.Spec.MinMember},
		Status: v1alpha1.PodGroupStatus{
			Phase:     v1alpha1.PodGroupPhase(in.Status.Phase),
			Running:   in.Status.Running,
			Succeeded: in.Status.Succeeded,
			Failed:    in.Status.Failed,
		},
	}
	out.ManagedFields = nil
	if in.Spec.MinResources != nil {
		out.Spec.MinResources = MinResources(*in.Spec.MinResources)
	}
	if q := in.Spec.Queue; q != "" && out.Labels[qapi.QueueLabel] == "" {
		out.Labels = maps.Clone(out.Labels)
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[qapi.QueueLabel] = q
	}
	if admittedPhase(in.Status.Phase) && out.Annotations[qapi.AdmittedAtAnnotation] == "" {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[qapi.AdmittedAtAnnotation] = in.CreationTimestamp.UTC().Format(time.RFC3339)
	}
	return out
}

// Ignored names the Volcano Queue fields Caldera does not honour, each
// with why, for a Warning Event on the Queue.
type Ignored struct {
	Field, Why string
}

// Queue returns the Caldera Queue a Volcano Queue maps onto, and the fields
// set on it that Caldera does not honour. weight, capability,
// guarantee.resource, reclaimable, parent (Volcano's root queue is the top
// of Caldera's tree) and priority map one to one; status.state Closed and
// Closing both stop admission (Closing lets what runs finish, as Closed
// does in Caldera). ok is false for Volcano's root queue, which is the tree
// itself, not a queue.
func Queue(in *vc.Queue) (out *qapi.Queue, ignored []Ignored, ok bool) {
	if in.Name == RootQueue {
		return nil, nil, false
	}
	out = &qapi.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: "Queue"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: qapi.QueueSpec{
			Weight:      in.Spec.Weight,
			Capability:  in.Spec.Capability.DeepCopy(),
			Guarantee:   in.Spec.Guarantee.Resource.DeepCopy(),
			Reclaimable: in.Spec.Reclaimable,
			Parent:      in.Spec.Parent,
			Priority:    in.Spec.Priority,
			State:       qapi.QueueStateOpen,
		},
	}
	out.ManagedFields = nil
	if out.Spec.Weight <= 0 {
		out.Spec.Weight = qapi.DefaultQueueWeight // Volcano's default
	}
	if out.Spec.Parent == RootQueue {
		out.Spec.Parent = ""
	}
	switch in.Status.State {
	case vc.QueueStateClosed, vc.QueueStateClosing:
		out.Spec.State = qapi.QueueStateClosed
	}
	if len(in.Spec.Deserved) > 0 {
		ignored = append(ignored, Ignored{"spec.deserved", "Caldera computes each queue's deserved share from weights, guarantees and demand"})
	}
	if in.Spec.Affinity != nil {
		ignored = append(ignored, Ignored{"spec.affinity", "node-group affinity is not supported; use node affinity on the pods"})
	}
	if len(in.Spec.ExtendClusters) > 0 {
		ignored = append(ignored, Ignored{"spec.extendClusters", "Caldera schedules one cluster"})
	}
	if in.Spec.Type != "" {
		ignored = append(ignored, Ignored{"spec.type", "Caldera has one kind of queue"})
	}
	return out, ignored, true
}
