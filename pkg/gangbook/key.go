package gangbook

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
)

// PodGroupLabel ties a pod to a PodGroup of the same namespace.
const PodGroupLabel = v1alpha1.PodGroupLabel

// GroupKey names a group: a PodGroup's namespace and name. It is a struct, not a
// "ns/name" string, so that hot paths look groups up without building strings.
type GroupKey struct {
	Namespace, Name string
}

// String renders the key as namespace/name for messages.
func (k GroupKey) String() string { return k.Namespace + "/" + k.Name }

// Named is the key as the status writer's work items name objects.
func (k GroupKey) Named() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// GroupKeyOf returns the group a pod belongs to, and whether it belongs to
// one: the PodGroup its pod-group label names; else the Volcano PodGroup
// its group-name annotation names; else the upstream PodGroup its
// spec.schedulingGroup.podGroupName names, unless kube-scheduler's own gang
// scheduling is on in this process (PodGroupName); the dialects share one
// key space per namespace; else, for a pod that asks for a gang by
// annotation (qapi.GangMinMemberAnnotation), the PodGroup of its controller
// (annotation.GroupOf). A name given wins over one derived, so a
// hand-written PodGroup always does. It is the one place that decides a
// pod's group; only an annotated pod costs an allocation (its name).
func GroupKeyOf(pod *v1.Pod) (GroupKey, bool) {
	if name := pod.Labels[PodGroupLabel]; name != "" {
		return GroupKey{Namespace: pod.Namespace, Name: name}, true
	}
	if name, ok := PodGroupName(pod); ok {
		return GroupKey{Namespace: pod.Namespace, Name: name}, true
	}
	if _, asks := pod.Annotations[qapi.GangMinMemberAnnotation]; !asks {
		return GroupKey{}, false
	}
	name, ok := annotation.GroupOf(pod)
	if !ok {
		return GroupKey{}, false
	}
	return GroupKey{Namespace: pod.Namespace, Name: name}, true
}

// PodGroupName names the group a pod joins by a dialect's own means rather
// than the PodGroup label: Volcano's group-name annotation, or upstream's
// spec.schedulingGroup when this process leaves those gangs to Caldera.
func PodGroupName(pod *v1.Pod) (string, bool) {
	if name, ok := volcano.GroupName(pod); ok {
		return name, true
	}
	return upstream.JoinedGroup(pod)
}

// PodPriority is the pod's priority, 0 when it sets none.
func PodPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// JoinsByName reports whether pod joins a group by Volcano's group-name
// annotation or upstream's spec.schedulingGroup rather than by the label.
func JoinsByName(pod *v1.Pod) bool {
	if _, labelled := pod.Labels[PodGroupLabel]; labelled {
		return false
	}
	_, ok := PodGroupName(pod)
	return ok
}
