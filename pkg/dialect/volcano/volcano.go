// Package volcano adapts Volcano's gang API (scheduling.volcano.sh/v1beta1
// PodGroup and Queue) to Caldera's group spec (pkg/groupspec) and queue
// model, and Caldera's decisions back to the status Volcano's tools read.
// The cache, admission, fair share, reclaim and placement never see a
// Volcano type: a Volcano PodGroup enters the cache as a groupspec.Spec, a
// Volcano Queue as a Caldera Queue. The conversions hold no state and make
// no API call. docs/gang-apis.md maps the fields.
package volcano

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
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

// TaskSpecKey is the annotation (and label) by which Volcano's job
// controller names the task of a job's pod.
const TaskSpecKey = "volcano.sh/task-spec"

// TaskName returns the task of the job pod belongs to, as Volcano's
// scheduler reads it: the task-spec annotation, else the label; "" for
// none.
func TaskName(pod *v1.Pod) string {
	if t := pod.Annotations[TaskSpecKey]; t != "" {
		return t
	}
	return pod.Labels[TaskSpecKey]
}

// started reports whether a PodGroup in phase p has started (Running,
// Unknown or Completed): its members were created and allocated once, so
// one with no member left is done, not about to begin.
func started(p vc.PodGroupPhase) bool {
	switch p {
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
	return p == vc.PodGroupInqueue || started(p)
}

// Spec reads a Volcano PodGroup as Caldera's group spec: minMember;
// minResources as Volcano's scheduler reads them (MinResources);
// spec.queue, unless the object carries Caldera's queue label; admitted
// when its phase is Inqueue or later (Volcano, or an earlier Caldera, let
// its controller create the pods) or Caldera's admitted-at annotation says
// so; started when Running, Unknown or Completed. Volcano's job controller
// creates the members only once the group is Inqueue
// (Rules.MembersAfterAdmission). minTaskMember is each task's minimum
// at the gang barrier (members name their task by TaskSpecKey).
func Spec(in *vc.PodGroup) *groupspec.Spec {
	out := &groupspec.Spec{
		Source: groupspec.Source{
			Dialect: groupspec.Volcano, APIVersion: APIVersion,
			Namespace: in.Namespace, Name: in.Name, UID: string(in.UID),
			ResourceVersion: in.ResourceVersion, Created: in.CreationTimestamp.Time,
		},
		Gang:              gang.Spec{MinMember: in.Spec.MinMember, MinTaskMember: maps.Clone(in.Spec.MinTaskMember)},
		Queue:             in.Spec.Queue,
		PriorityClassName: in.Spec.PriorityClassName,
		Admitted:          admittedPhase(in.Status.Phase) || qapi.AdmittedSince(in.Annotations, in.CreationTimestamp.Time),
		Started:           started(in.Status.Phase),
		Rules:             groupspec.Rules{MembersAfterAdmission: true},
		Annotations:       in.Annotations,
	}
	if q := in.Labels[qapi.QueueLabel]; q != "" {
		out.Queue = q
	}
	if in.Spec.MinResources != nil {
		out.Gang.MinResources = convert.Resources(MinResources(*in.Spec.MinResources))
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
// does in Caldera), and hold placement (dialect.HoldPlacementAnnotation):
// nothing new is placed, as Volcano's proportion plugin allocates only in
// Open queues. ok is false for Volcano's root queue, which is the tree
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
		// Volcano allocates nothing in a queue that is not Open, the pods
		// of jobs admitted before included.
		out.Spec.State = qapi.QueueStateClosed
		out.Annotations = maps.Clone(out.Annotations)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[dialect.HoldPlacementAnnotation] = "true"
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
