package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Gangs asked for on a pod template, without a hand-written PodGroup
// (docs/gangs.md). The pods that share one controller ownerReference form
// one gang, whose PodGroup the scheduler creates. An annotation and not a
// label: the value is a number, not something to select on, and a pod's
// annotations may be changed by nobody's selector.
const (
	// GangMinMemberAnnotation asks for a gang of at least this many
	// members (a positive integer) among the pods of the pod's controller.
	GangMinMemberAnnotation = GroupName + "/gang-min-member"
	// GangTimeoutSecondsAnnotation is the created PodGroup's
	// scheduleTimeoutSeconds (a positive integer); optional.
	GangTimeoutSecondsAnnotation = GroupName + "/gang-timeout-seconds"
	// ManagedByLabel marks the PodGroups the scheduler created for gangs
	// asked for by annotation, with the value ManagedByCaldera.
	ManagedByLabel = GroupName + "/managed-by"
	// ManagedByCaldera is ManagedByLabel's value.
	ManagedByCaldera = "caldera"
)

// maxImplicitName keeps a created PodGroup's name usable as the value of
// the pod-group label (63 characters at most), so a user can move from the
// annotation to a hand-written PodGroup under the same name.
const maxImplicitName = 63

// implicitHashLen is how many hex digits of sha256(owner UID) end a name
// that had to be cut: 40 bits keep owners with the same long prefix apart.
const implicitHashLen = 10

// ImplicitPodGroupName is the name of the PodGroup of the gang of the pods
// whose controller is the object kind/name with uid: lower-case kind, '-',
// name ("job-train"). A name longer than 63 characters is cut and ends in
// '-' and 10 hex digits of sha256(uid). It depends on the ownerReference
// only, so every scheduler replica, before and after a restart, derives the
// same name.
func ImplicitPodGroupName(kind, name string, uid types.UID) string {
	n := len(kind) + 1 + len(name)
	if n <= maxImplicitName {
		var b strings.Builder
		b.Grow(n)
		for i := 0; i < len(kind); i++ {
			c := kind[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		b.WriteByte('-')
		b.WriteString(name)
		return b.String()
	}
	sum := sha256.Sum256([]byte(uid))
	suffix := "-" + hex.EncodeToString(sum[:])[:implicitHashLen]
	full := strings.ToLower(kind) + "-" + name
	head := strings.TrimRight(full[:maxImplicitName-len(suffix)], "-.")
	return head + suffix
}

// GangMinMember parses the pod's GangMinMemberAnnotation: its value, and
// whether the annotation is present at all. A present value that is not a
// positive integer yields 0, true.
func GangMinMember(pod *corev1.Pod) (int32, bool) {
	v, ok := pod.Annotations[GangMinMemberAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return 0, true
	}
	return int32(n), true
}

// GangTimeoutSeconds parses the pod's GangTimeoutSecondsAnnotation: its
// value and whether it is valid; absent is valid with 0.
func GangTimeoutSeconds(pod *corev1.Pod) (int32, bool) {
	v, ok := pod.Annotations[GangTimeoutSecondsAnnotation]
	if !ok {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int32(n), true
}

// ControllerOf returns the pod's controller ownerReference without copying
// it (metav1.GetControllerOf copies); nil without one.
func ControllerOf(pod *corev1.Pod) *metav1.OwnerReference {
	for i := range pod.OwnerReferences {
		if r := &pod.OwnerReferences[i]; r.Controller != nil && *r.Controller {
			return r
		}
	}
	return nil
}

// ImplicitPodGroupOf returns the name of the PodGroup of the gang the pod
// asks for by annotation, and whether it asks for a valid one: the
// annotation is a positive integer and the pod has a controller. The
// pod-group label, when present, wins over this (the caller's rule).
func ImplicitPodGroupOf(pod *corev1.Pod) (string, bool) {
	if n, ok := GangMinMember(pod); !ok || n <= 0 {
		return "", false
	}
	ref := ControllerOf(pod)
	if ref == nil {
		return "", false
	}
	return ImplicitPodGroupName(ref.Kind, ref.Name, ref.UID), true
}
