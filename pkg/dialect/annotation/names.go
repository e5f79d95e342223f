// Package annotation is the dialect of gangs asked for on a pod template,
// without a hand-written PodGroup (docs/gangs.md): the pods that carry
// scheduling.caldera.dev/gang-min-member and share one controller
// ownerReference form one gang, whose scheduler-plugins PodGroup the
// scheduler creates. It has no object of its own to watch; what is
// particular to it is the name a pod's gang gets (names.go), the book of
// such gangs and what members that disagree are told (book.go), and the
// PodGroup created for each (create.go). The cache keeps a Book and calls
// it under its own lock; the status writer creates what the Book hands out.
package annotation

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// maxImplicitName keeps a created PodGroup's name usable as the value of
// the pod-group label (63 characters at most), so a user can move from the
// annotation to a hand-written PodGroup under the same name.
const maxImplicitName = 63

// implicitHashLen is how many hex digits of sha256(owner UID) end a name
// that had to be cut: 40 bits keep owners with the same long prefix apart.
const implicitHashLen = 10

// PodGroupName is the name of the PodGroup of the gang of the pods
// whose controller is the object kind/name with uid: lower-case kind, '-',
// name ("job-train"). A name longer than 63 characters is cut and ends in
// '-' and 10 hex digits of sha256(uid). It depends on the ownerReference
// only, so every scheduler replica, before and after a restart, derives the
// same name.
func PodGroupName(kind, name string, uid types.UID) string {
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

// MinMember parses the pod's qapi.GangMinMemberAnnotation: its value, and
// whether the annotation is present at all. A present value that is not a
// positive integer yields 0, true.
func MinMember(pod *corev1.Pod) (int32, bool) {
	v, ok := pod.Annotations[qapi.GangMinMemberAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return 0, true
	}
	return int32(n), true
}

// TimeoutSeconds parses the pod's qapi.GangTimeoutSecondsAnnotation: its
// value and whether it is valid; absent is valid with 0.
func TimeoutSeconds(pod *corev1.Pod) (int32, bool) {
	v, ok := pod.Annotations[qapi.GangTimeoutSecondsAnnotation]
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

// GroupOf returns the name of the PodGroup of the gang the pod
// asks for by annotation, and whether it asks for a valid one: the
// annotation is a positive integer and the pod has a controller. The
// pod-group label, when present, wins over this (the caller's rule).
func GroupOf(pod *corev1.Pod) (string, bool) {
	if n, ok := MinMember(pod); !ok || n <= 0 {
		return "", false
	}
	ref := ControllerOf(pod)
	if ref == nil {
		return "", false
	}
	return PodGroupName(ref.Kind, ref.Name, ref.UID), true
}
