package annotation

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// Reasons of the Warning Events about pods that ask for a gang by
// annotation.
const (
	// ReasonInvalidGang: the pod's gang-min-member is not a positive
	// integer, or the pod has no controller; it is scheduled on its own.
	ReasonInvalidGang = "InvalidGang"
	// ReasonGangAnnotationMismatch: the pod's gang annotations disagree
	// with its gang's first member's, or its timeout is not a positive
	// integer; the gang follows the first member and ignores the timeout.
	ReasonGangAnnotationMismatch = "GangAnnotationMismatch"
)

// RecreateAfter is how long a PodGroup handed out for creation is not
// handed out again: the create, or the informer's delivery of the object,
// is still under way.
const RecreateAfter = 5 * time.Second

// Problem is what a pod is told about its gang annotations, as a Warning
// Event; the zero Problem tells nothing.
type Problem struct {
	Reason, Message string
}

// Book records the gangs asked for by annotation: what the first member
// said of each (the PodGroup is created with it, and members that disagree
// are told) and which lack their PodGroup. It is not safe for concurrent
// use: the cache calls it under its own lock. Every method but ToCreate is
// O(1) per pod event; nothing scans pods.
type Book struct {
	groups map[types.NamespacedName]*gang
	// missing are the gangs whose PodGroup does not exist, each with when
	// it may be handed out for creation (zero: at once).
	missing map[types.NamespacedName]time.Time
}

// gang is what the first member seen says of its gang.
type gang struct {
	members   int
	minMember int32
	timeout   *int32
	queue     string
	owner     metav1.OwnerReference
}

// Add counts a new member of gang key that is in it by annotation (exists:
// whether the gang's PodGroup exists now). It reports whether the gang now
// follows another controller object than before (its old terminating
// members are then leftovers: Leftover), and what the pod is to be told.
func (b *Book) Add(key types.NamespacedName, pod *v1.Pod, exists bool) (ownerChanged bool, p Problem) {
	if b.groups == nil {
		b.groups = map[types.NamespacedName]*gang{}
		b.missing = map[types.NamespacedName]time.Time{}
	}
	n, _ := MinMember(pod)
	timeout, timeoutOK := TimeoutSeconds(pod)
	g := b.groups[key]
	if g == nil {
		g = &gang{}
		b.groups[key] = g
		if !exists {
			b.missing[key] = time.Time{}
		}
	}
	ref := ControllerOf(pod)
	if g.members == 0 || ref != nil && ref.UID != g.owner.UID && pod.DeletionTimestamp == nil {
		// The first member speaks for the gang; so does the first live pod
		// of another controller object of the same name (a Job deleted and
		// made again), whose PodGroup must not be owned by the deleted one:
		// the garbage collector would delete it again, round after round.
		g.minMember, g.queue, g.timeout = n, pod.Labels[qapi.QueueLabel], nil
		if timeoutOK && timeout > 0 {
			g.timeout = &timeout
		}
		if ref != nil {
			ownerChanged = g.members > 0 && g.owner.UID != "" && g.owner.UID != ref.UID
			g.owner = metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
		}
	}
	g.members++
	switch {
	case n != g.minMember:
		p = Problem{ReasonGangAnnotationMismatch, fmt.Sprintf(
			"%s is %d, but the first member of gang %s said %d: the gang follows the first member",
			qapi.GangMinMemberAnnotation, n, key, g.minMember)}
	case !timeoutOK:
		p = Problem{ReasonGangAnnotationMismatch, fmt.Sprintf(
			"%s is %q, not a positive integer: ignored", qapi.GangTimeoutSecondsAnnotation, pod.Annotations[qapi.GangTimeoutSecondsAnnotation])}
	}
	return ownerChanged, p
}

// Remove uncounts a member of gang key that was in it by annotation; the
// gang is forgotten with its last member.
func (b *Book) Remove(key types.NamespacedName) {
	g := b.groups[key]
	if g == nil {
		return
	}
	if g.members--; g.members <= 0 {
		delete(b.groups, key)
		delete(b.missing, key)
	}
}

// Leftover reports whether pod, terminating and in gang key by annotation,
// is left over from a deleted controller object of the gang's name: its
// controller is not the one the gang follows now. It belongs to a Job
// being deleted, not to the gang its successor forms, which would
// otherwise count it as placed (or running) and let its own pods bind as
// extras past the barrier.
func (b *Book) Leftover(key types.NamespacedName, pod *v1.Pod) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	g := b.groups[key]
	ref := ControllerOf(pod)
	return g != nil && ref != nil && g.owner.UID != "" && ref.UID != g.owner.UID
}

// SetPodGroup records that gang key's PodGroup exists (appeared) or not: a
// PodGroup deleted while members by annotation remain is created again (the
// owner's garbage collection deletes the members too).
func (b *Book) SetPodGroup(key types.NamespacedName, exists bool) {
	if b.groups[key] == nil {
		return
	}
	if exists {
		delete(b.missing, key)
	} else {
		b.missing[key] = time.Time{}
	}
}

// Has reports whether key is a gang with members by annotation.
func (b *Book) Has(key types.NamespacedName) bool {
	return b.groups[key] != nil
}

// ToCreate returns the gangs whose PodGroup does not exist, each handed out
// again only RecreateAfter later. O(gangs lacking a PodGroup).
func (b *Book) ToCreate(now time.Time) []ToCreate {
	var out []ToCreate
	for key, at := range b.missing {
		if now.Before(at) {
			continue
		}
		g := b.groups[key]
		if g == nil || g.owner.UID == "" {
			delete(b.missing, key)
			continue
		}
		b.missing[key] = now.Add(RecreateAfter)
		out = append(out, ToCreate{
			Key: key, Owner: g.owner, MinMember: g.minMember,
			ScheduleTimeoutSeconds: g.timeout, Queue: g.queue,
		})
	}
	return out
}

// Invalid is what a pod that asks for a gang by annotation but gets none
// (GroupOf said no) is told: why it is scheduled on its own.
func Invalid(pod *v1.Pod) Problem {
	msg := fmt.Sprintf("%s is %q, not a positive integer: the pod is scheduled on its own",
		qapi.GangMinMemberAnnotation, pod.Annotations[qapi.GangMinMemberAnnotation])
	if n, _ := MinMember(pod); n > 0 {
		msg = fmt.Sprintf("%s is set but the pod has no controller ownerReference to name its gang: the pod is scheduled on its own", qapi.GangMinMemberAnnotation)
	}
	return Problem{ReasonInvalidGang, msg}
}
