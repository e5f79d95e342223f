package cache

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Gangs asked for by annotation (docs/gangs.md). GroupKeyOf puts the pods
// that carry scheduling.caldera.dev/gang-min-member and share a controller
// into the group named by qapi.ImplicitPodGroupOf; the rest of the cache
// treats that group like any other. What is particular to them is kept
// here: which such groups lack their PodGroup (the status writer creates
// it), what to create it with, and the Warning Events about bad input.
// Every method is O(1) per pod event and runs under Cache.mu; nothing scans
// pods.

// recreateAfter is how long a PodGroup handed out for creation is not
// handed out again: the create, or the informer's delivery of the object,
// is still under way.
const recreateAfter = 5 * time.Second

// implicitBook is the cache's record of gangs asked for by annotation.
type implicitBook struct {
	// groups are those with members by annotation.
	groups map[GroupKey]*implicitGroup
	// missing are those of groups whose PodGroup does not exist, each with
	// when it may be handed out for creation (zero: at once).
	missing map[GroupKey]time.Time
	// notices are the Events queued for the writer, by pod; noticed are the
	// pods told already, so each is told once while it exists.
	notices map[types.UID]status.PodNotice
	noticed map[types.UID]struct{}
}

// implicitGroup is what the first member seen says of its gang: the
// PodGroup is created with it, and members that disagree are told.
type implicitGroup struct {
	members   int
	minMember int32
	timeout   *int32
	queue     string
	owner     metav1.OwnerReference
}

// implicitMember reports whether pod is in its group by the gang
// annotation, not by a name given (the pod-group label, or Volcano's
// group-name annotation: GroupKeyOf's order).
func implicitMember(pod *v1.Pod) bool {
	if pod.Labels[PodGroupLabel] != "" {
		return false
	}
	_, named := podGroupName(pod)
	return !named
}

// implicitAddLocked counts a new member of g that is in it by annotation,
// and reports whether the gang now follows another controller object than
// before (its old terminating members are then leftovers).
func (c *Cache) implicitAddLocked(g *group, pod *v1.Pod) (ownerChanged bool) {
	b := &c.implicit
	if b.groups == nil {
		b.groups = map[GroupKey]*implicitGroup{}
		b.missing = map[GroupKey]time.Time{}
	}
	n, _ := qapi.GangMinMember(pod)
	timeout, timeoutOK := qapi.GangTimeoutSeconds(pod)
	ig := b.groups[g.key]
	if ig == nil {
		ig = &implicitGroup{}
		b.groups[g.key] = ig
		if g.obj == nil {
			b.missing[g.key] = time.Time{}
		}
	}
	ref := qapi.ControllerOf(pod)
	if ig.members == 0 || ref != nil && ref.UID != ig.owner.UID && pod.DeletionTimestamp == nil {
		// The first member speaks for the gang; so does the first live pod
		// of another controller object of the same name (a Job deleted and
		// made again), whose PodGroup must not be owned by the deleted one:
		// the garbage collector would delete it again, round after round.
		ig.minMember, ig.queue, ig.timeout = n, pod.Labels[qapi.QueueLabel], nil
		if timeoutOK && timeout > 0 {
			ig.timeout = &timeout
		}
		if ref != nil {
			ownerChanged = ig.members > 0 && ig.owner.UID != "" && ig.owner.UID != ref.UID
			ig.owner = metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
		}
	}
	ig.members++
	switch {
	case n != ig.minMember:
		c.noticeLocked(pod, status.ReasonGangAnnotationMismatch, fmt.Sprintf(
			"%s is %d, but the first member of gang %s said %d: the gang follows the first member",
			qapi.GangMinMemberAnnotation, n, g.key, ig.minMember))
	case !timeoutOK:
		c.noticeLocked(pod, status.ReasonGangAnnotationMismatch, fmt.Sprintf(
			"%s is %q, not a positive integer: ignored", qapi.GangTimeoutSecondsAnnotation, pod.Annotations[qapi.GangTimeoutSecondsAnnotation]))
	}
	return ownerChanged
}

// implicitLeftoverLocked reports whether pod, terminating, is left over
// from a deleted controller object of the name whose gang by annotation
// the group key is: its controller is not the one the gang follows now.
// It belongs to a Job being deleted, not to the gang its successor forms,
// which would otherwise count it as placed (or running) and let its own
// pods bind as extras past the barrier. O(1).
func (c *Cache) implicitLeftoverLocked(key GroupKey, pod *v1.Pod) bool {
	if pod.DeletionTimestamp == nil || !implicitMember(pod) {
		return false
	}
	ig := c.implicit.groups[key]
	ref := qapi.ControllerOf(pod)
	return ig != nil && ref != nil && ig.owner.UID != "" && ref.UID != ig.owner.UID
}

// dropImplicitLeftoversLocked takes out of g the terminating members of
// the controller object its gang by annotation no longer follows. O(members),
// once per change of controller.
func (c *Cache) dropImplicitLeftoversLocked(g *group) {
	for uid, m := range g.members {
		if m.implicit && m.pod != nil && c.implicitLeftoverLocked(g.key, m.pod) {
			c.removeMemberLocked(g.key, uid)
		}
	}
}

// implicitRemoveLocked uncounts a member of group key that was in it by
// annotation; the gang is forgotten with its last member.
func (c *Cache) implicitRemoveLocked(key GroupKey) {
	ig := c.implicit.groups[key]
	if ig == nil {
		return
	}
	if ig.members--; ig.members <= 0 {
		delete(c.implicit.groups, key)
		delete(c.implicit.missing, key)
	}
}

// implicitPodGroupLocked records that group key's PodGroup exists (appeared)
// or not: a PodGroup deleted while members by annotation remain is created
// again (the owner's garbage collection deletes the members too).
func (c *Cache) implicitPodGroupLocked(key GroupKey, exists bool) {
	if c.implicit.groups[key] == nil {
		return
	}
	if exists {
		delete(c.implicit.missing, key)
	} else {
		c.implicit.missing[key] = time.Time{}
	}
}

// invalidGangLocked tells a pod that asks for a gang by annotation but
// gets none (GroupKeyOf said no) why it is scheduled on its own.
func (c *Cache) invalidGangLocked(pod *v1.Pod) {
	v := pod.Annotations[qapi.GangMinMemberAnnotation]
	msg := fmt.Sprintf("%s is %q, not a positive integer: the pod is scheduled on its own", qapi.GangMinMemberAnnotation, v)
	if n, _ := qapi.GangMinMember(pod); n > 0 {
		msg = fmt.Sprintf("%s is set but the pod has no controller ownerReference to name its gang: the pod is scheduled on its own", qapi.GangMinMemberAnnotation)
	}
	c.noticeLocked(pod, status.ReasonInvalidGang, msg)
}

// noticeLocked queues a Warning Event about pod, unless it was told
// already. Finished pods are not told: they have run.
func (c *Cache) noticeLocked(pod *v1.Pod, reason, msg string) {
	b := &c.implicit
	if phaseOf(pod).Terminal() {
		return
	}
	if _, told := b.noticed[pod.UID]; told {
		return
	}
	if b.noticed == nil {
		b.noticed = map[types.UID]struct{}{}
		b.notices = map[types.UID]status.PodNotice{}
	}
	b.noticed[pod.UID] = struct{}{}
	b.notices[pod.UID] = status.PodNotice{Pod: pod, Reason: reason, Message: msg}
}

// forgetNoticeLocked forgets what was told to a deleted pod.
func (c *Cache) forgetNoticeLocked(uid types.UID) {
	if c.implicit.noticed == nil {
		return
	}
	delete(c.implicit.noticed, uid)
	delete(c.implicit.notices, uid)
}

// PodGroupsToCreate implements status.Source: the gangs asked for by
// annotation whose PodGroup does not exist, each handed out again only
// recreateAfter later. O(gangs lacking a PodGroup).
func (c *Cache) PodGroupsToCreate() []status.PodGroupToCreate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.implicit.missing) == 0 {
		return nil
	}
	now := time.Now()
	var out []status.PodGroupToCreate
	for key, at := range c.implicit.missing {
		if now.Before(at) {
			continue
		}
		ig := c.implicit.groups[key]
		if ig == nil || ig.owner.UID == "" {
			delete(c.implicit.missing, key)
			continue
		}
		c.implicit.missing[key] = now.Add(recreateAfter)
		out = append(out, status.PodGroupToCreate{
			Key: key.named(), Owner: ig.owner, MinMember: ig.minMember,
			ScheduleTimeoutSeconds: ig.timeout, Queue: ig.queue,
		})
	}
	return out
}

// PodNotices implements status.Source.
func (c *Cache) PodNotices() []status.PodNotice {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.implicit.notices) == 0 {
		return nil
	}
	out := make([]status.PodNotice, 0, len(c.implicit.notices))
	for uid, n := range c.implicit.notices {
		out = append(out, n)
		delete(c.implicit.notices, uid)
	}
	return out
}
