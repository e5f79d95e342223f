package cache

import (
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/resources"
)

func phaseOf(pod *v1.Pod) gang.PodPhase {
	switch pod.Status.Phase {
	case v1.PodRunning:
		return gang.PodRunning
	case v1.PodSucceeded:
		return gang.PodSucceeded
	case v1.PodFailed:
		return gang.PodFailed
	default:
		return gang.PodPending
	}
}

func asPod(obj any) *v1.Pod {
	p, _ := dialect.ObjectOf[*v1.Pod](obj)
	return p
}

// Gang members reach the cache from two informers (newCache): unfinished
// pods from the scheduler's own pod informer, finished ones (Succeeded,
// Failed) from the cache's. A member that finishes leaves the first (a delete
// carrying its last unfinished state) and enters the second, and the two
// deliver in either order. Since a pod never leaves a terminal phase, a
// terminal member ignores what the unfinished side says of it; what remains
// ambiguous is a delete of a bound member before the finished side has
// spoken, which is applied at once but holds the group's status write until
// the finished side delivers the member or finishSettle passes (see
// unfinishedPodDeleteLocked).

// finishSettle is how long a group's status and Events wait at most after one
// of its bound members left the scheduler's informer without the finished-pod
// informer having delivered it: if the member finished, that informer
// delivers it meanwhile (in milliseconds, as both watch the same API server)
// and ends the wait, so status never shows the member missing; if it was
// deleted, status shows that finishSettle later.
const finishSettle = 2 * time.Second

// unfinishedPodLocked takes an unfinished pod added or updated, the member
// side of ApplyPod: pod's GroupKeyOf is key and labelled; it returns the
// pods to activate.
func (c *Cache) unfinishedPodLocked(pod *v1.Pod, key gangbook.GroupKey, labelled bool) map[string]*v1.Pod {
	if phaseOf(pod).Terminal() {
		// The scheduler's informer holds no finished pod; one that shows up
		// anyway is the finished side's to deliver.
		return nil
	}
	if !labelled {
		if _, known := c.memberOf[pod.UID]; !known {
			if _, asks := pod.Annotations[qapi.GangMinMemberAnnotation]; asks {
				// It asks for a gang by annotation but gets none.
				c.notices.note(pod, annotation.Invalid(pod))
			}
			return nil // most pods: not a gang member, and never were
		}
	}
	return c.joinLocked(pod, key, labelled, false)
}

// onMember records pod's state; finished says which informer delivered it.
func (c *Cache) onMember(logger klog.Logger, pod *v1.Pod, finished bool) {
	key, labelled := gangbook.GroupKeyOf(pod)
	c.mu.Lock()
	act := c.joinLocked(pod, key, labelled, finished)
	c.mu.Unlock()
	c.activate(logger, act)
}

// joinLocked is onMember's work on pod, whose GroupKeyOf is key and
// labelled; it returns the pods to activate.
func (c *Cache) joinLocked(pod *v1.Pod, key gangbook.GroupKey, labelled, finished bool) (act map[string]*v1.Pod) {
	// A pod left over from an earlier object of its group's name is in no
	// group: a member leaves it, below.
	labelled = labelled && !admission.Leftover(c.groups[key], pod) && !implicitLeftover(&c.implicit, key, pod)
	prevKey, known := c.memberOf[pod.UID]
	if known {
		if _, m := c.memberLocked(prevKey, pod.UID); !finished && m != nil && m.State.Phase.Terminal() {
			// A late event of the unfinished side: the pod has finished.
			return nil
		}
		if !labelled || prevKey != key {
			// The label changed or went away (or the pod is left over):
			// the pod leaves its old group.
			c.removeMemberLocked(prevKey, pod.UID)
		}
	}
	if labelled {
		_, prev := c.memberLocked(key, pod.UID)
		wasBound := prev != nil && prev.State.Assigned
		g, m := c.upsertMemberLocked(key, pod)
		m.Confirmed = true
		c.protect.owes(g, m, pod, c.membersSynced)
		if finished {
			delete(g.Finishing, pod.UID) // it was finishing, not deleted
		}
		if !c.membersSynced.fired() {
			// The scheduler's first list (a restart: every bound member):
			// membersListed refreshes each group once, with all its members
			// in, rather than at each of them (its unit synced, its minimum
			// summed again). Until then nothing reads what a refresh
			// updates: PreEnqueue, the admission loop and the status writer
			// wait for membersListed, which activates what it must.
			return nil
		}
		act = c.refreshLocked(g)
		if act == nil && (!known || prevKey != key) && g.Enqueueable && !m.State.Placed() && !m.State.Phase.Terminal() {
			// The scheduling queue gets the pod from another handler of the
			// same informer, which may have run PreEnqueue on it before this
			// one counted it (refused: the gang lacked it, or was not yet
			// admitted). Nothing else would move it again.
			act = map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod}
		}
		if act == nil && !wasBound && m.State.Assigned && c.adm.On() && g.Enqueueable &&
			g.Counts.Bound == int(g.Spec.MinMember) && g.Counts.Pending > 0 {
			// The gang just started: the members beyond its minimum that
			// PreFilter held back (earlyExtra) may be placed now. The
			// scheduler's own hint for this bind may have run before this
			// handler counted it, and then nothing else would move them.
			act = g.PendingPodsLocked()
		}
	}
	return act
}

// memberLocked returns group key and its member uid; either may be nil.
func (c *Cache) memberLocked(key gangbook.GroupKey, uid types.UID) (*gangbook.Group, *gangbook.Member) {
	g := c.groups[key]
	if g == nil {
		return nil, nil
	}
	return g, g.Members[uid]
}

// unfinishedPodDeleteLocked takes a delete from the scheduler's pod informer: the
// pod was deleted, or it finished. A finished member is then the other
// informer's; any other leaves its group at once, so that no decision counts
// it. A bound one may have finished, with the finished-pod informer not yet
// caught up, so its group's status waits for that informer, finishSettle at
// most.
func (c *Cache) unfinishedPodDeleteLocked(pod *v1.Pod) {
	c.notices.forget(pod.UID)
	key, ok := c.memberOf[pod.UID]
	if !ok {
		return
	}
	switch g, m := c.memberLocked(key, pod.UID); {
	case m != nil && m.State.Phase.Terminal():
		return
	case m != nil && m.State.Assigned:
		if g.Finishing == nil {
			g.Finishing = map[types.UID]time.Time{}
		}
		g.Finishing[pod.UID] = time.Now().Add(finishSettle)
	}
	c.removeMemberLocked(key, pod.UID)
}

// DeleteFinishedPod takes a finished gang member deleted, from the
// finished-member informer.
func (c *Cache) DeleteFinishedPod(_ klog.Logger, pod *v1.Pod) {
	if pod == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notices.forget(pod.UID)
	if key, ok := c.memberOf[pod.UID]; ok {
		c.removeMemberLocked(key, pod.UID)
	}
}

// upsertMemberLocked records pod as a member of group key with the state its
// object shows. Reserve and Permit call it too, with the scheduler's copy of the
// pod, because the scheduler's informer may deliver a pod before ours does.
func (c *Cache) upsertMemberLocked(key gangbook.GroupKey, pod *v1.Pod) (*gangbook.Group, *gangbook.Member) {
	g := c.groupLocked(key)
	m := g.Members[pod.UID]
	ownerChanged := false
	if m == nil {
		m = &gangbook.Member{Request: c.requests.PodRequest(pod, nil), Task: podTask(pod)}
		g.Members[pod.UID] = m
		c.memberOf[pod.UID] = key
		g.AddPriority(gangbook.PodPriority(pod))
		g.MinRequestValid = false
		if implicitMember(pod) {
			m.Implicit = true
			// The gang by annotation may now follow another controller
			// object (ownerChanged, below).
			var p annotation.Problem
			if ownerChanged, p = c.implicit.Add(g.Key.Named(), pod, g.Obj != nil); p.Reason != "" {
				c.notices.note(pod, p)
			}
		}
	} else {
		countLocked(g, m, -1, c.adm)
		// Requests change in place (a resize): the gang's minimum must follow.
		if req := c.requests.PodRequest(pod, m.Request); !req.Equal(m.Request) {
			m.Request = req
			g.MinRequestValid = false
		}
	}
	wasReachable := m.State.Reachable()
	m.Pod = pod
	m.State.Phase = phaseOf(pod)
	m.State.Assigned = pod.Spec.NodeName != ""
	m.State.Unreachable = !c.reachableLocked(pod)
	if m.State.Assigned || m.State.Phase.Terminal() {
		// Binding confirmed (or the pod is done): no longer merely reserved.
		m.State.Reserved = false
		m.State.Waiting = false
		m.ReservedOn = ""
	}
	if m.State.Reachable() != wasReachable {
		g.MinRequestValid = false
	}
	countLocked(g, m, +1, c.adm)
	if g.Obj == nil && (g.Created.IsZero() || pod.CreationTimestamp.Time.Before(g.Created)) {
		g.Created = pod.CreationTimestamp.Time
	}
	if ownerChanged {
		// Its old terminating members are leftovers: O(members), once
		// per change of controller.
		for uid, m := range g.Members {
			if m.Implicit && m.Pod != nil && implicitLeftover(&c.implicit, g.Key, m.Pod) {
				c.removeMemberLocked(g.Key, uid)
			}
		}
	}
	return g, m
}

// reachableLocked reports whether this scheduler can place pod: one of
// its profiles with CalderaGang schedules it and no scheduling gate holds
// it. A cache that no profile has registered with (TrackReservations; the
// cache's own tests) takes every pod as its own.
func (c *Cache) reachableLocked(pod *v1.Pod) bool {
	if len(pod.Spec.SchedulingGates) > 0 {
		return false
	}
	return len(c.reservingProfiles) == 0 || c.reservingProfiles[pod.Spec.SchedulerName]
}

// cycleMemberLocked returns pod's member for Reserve and Permit. They get the
// scheduler's assumed copy of the pod, whose spec.nodeName is the node reserved
// for it, not a binding: taking it as one would count the member as bound, and
// still placed after Unreserve. So a member our informer delivered keeps the
// state its object shows, and an unknown one is recorded from the copy with
// nodeName cleared.
func (c *Cache) cycleMemberLocked(key gangbook.GroupKey, pod *v1.Pod) (*gangbook.Group, *gangbook.Member) {
	if g := c.groups[key]; g != nil {
		if m := g.Members[pod.UID]; m != nil {
			return g, m
		}
	}
	if pod.Spec.NodeName != "" {
		unbound := *pod
		unbound.Spec.NodeName = ""
		pod = &unbound
	}
	return c.upsertMemberLocked(key, pod)
}

func (c *Cache) removeMemberLocked(key gangbook.GroupKey, uid types.UID) {
	delete(c.memberOf, uid)
	c.protect.forget(uid)
	g := c.groups[key]
	if g == nil {
		return
	}
	m := g.Members[uid]
	if m == nil {
		return
	}
	countLocked(g, m, -1, c.adm)
	delete(g.Members, uid)
	if m.Implicit {
		c.implicit.Remove(key.Named())
	}
	c.adm.ForgetRefusedExtraLocked(uid)
	g.MinRequestValid = false
	g.RemovePriority(gangbook.PodPriority(m.Pod))
	c.refreshLocked(g)
	c.dropIfEmptyLocked(g)
}

// SetGroup implements dialect.Sink: it takes a group's spec as its adapter
// read it from an added or updated object, whatever its dialect.
func (c *Cache) SetGroup(logger klog.Logger, s *groupspec.Spec) {
	if s == nil {
		return
	}
	c.mu.Lock()
	g := c.groupLocked(gangbook.GroupKey{Namespace: s.Source.Namespace, Name: s.Source.Name})
	if shadowedLocked(logger, g, s) {
		c.mu.Unlock()
		return
	}
	appeared := g.Obj == nil
	g.Obj = s
	if appeared {
		// Take the leftover pods out of g: O(members), once per PodGroup
		// object.
		for uid, m := range g.Members {
			if admission.Leftover(g, m.Pod) {
				c.removeMemberLocked(g.Key, uid)
			}
		}
	}
	c.implicit.SetPodGroup(g.Key.Named(), true)
	spec := s.Gang
	resized := spec.MinMember != g.Spec.MinMember || !spec.MinResources.Equal(g.Spec.MinResources) ||
		(spec.MinResources == nil) != (g.Spec.MinResources == nil) || !maps.Equal(spec.MinTaskMember, g.Spec.MinTaskMember)
	if resized {
		g.MinRequestValid = false
	}
	g.Spec = spec
	g.Created = s.Source.Created
	act := c.refreshLocked(g)
	var allow []types.UID
	var firstWaiting time.Time
	if ready, _ := g.BarrierOpen(); resized && g.Counts.Waiting > 0 && ready {
		// minMember was lowered to what is placed already: the members
		// waiting in Permit would otherwise wait out their timeout and the
		// gang would back off, though nothing more is needed.
		allow, firstWaiting = c.readyLocked(g)
	}
	if act == nil && (appeared || resized) && g.Enqueueable && g.BackoffTimer == nil {
		// kube-scheduler does not watch PodGroups (CalderaGang registers no
		// PodGroup event), so a gang refused as too large, or rejected
		// while its PodGroup was missing, is retried here when a smaller
		// minMember or minResources may now fit. Status writes change
		// neither and activate nothing. A gang in backoff is retried when
		// its backoff ends.
		act = g.PendingPodsLocked()
	}
	c.mu.Unlock()
	c.allowWaiting(time.Now(), allow, firstWaiting, gangPluginName)
	c.activate(logger, act)
}

// DeleteGroup implements dialect.Sink: it takes the deletion of a group's
// object, whatever its dialect; a deletion of another object than the one the group holds (of
// another dialect, or one replaced since) changes nothing.
func (c *Cache) DeleteGroup(logger klog.Logger, s *groupspec.Spec) {
	if s == nil {
		return
	}
	key := gangbook.GroupKey{Namespace: s.Source.Namespace, Name: s.Source.Name}
	c.mu.Lock()
	g := c.groups[key]
	var waiting []types.UID
	if g != nil && (g.Obj == nil || groupspec.SameObject(g.Obj, s)) {
		g.Obj = nil
		g.Spec = gang.Spec{}
		g.Enqueueable = false
		g.MinRequestValid = false
		// What the group went through belongs to the deleted object: a
		// PodGroup created under the same name (members may remain, e.g.
		// a Job's pods) starts without its backoff, first attempt, reason
		// or last Event.
		g.FirstAttempt, g.Unschedulable, g.LastEvent, g.OverdueWhy = time.Time{}, "", "", ""
		g.Backoff = gang.BackoffState{}
		if g.BackoffTimer != nil {
			g.BackoffTimer.Stop()
			g.BackoffTimer = nil
		}
		for uid, m := range g.Members {
			if m.State.Waiting {
				waiting = append(waiting, uid)
			}
		}
		c.implicit.SetPodGroup(key.Named(), false)
		c.refreshLocked(g)
		c.dropIfEmptyLocked(g)
	}
	c.mu.Unlock()
	if len(waiting) > 0 {
		countRejection(RejectPodGroupDeleted)
	}
	// Members parked in Permit would otherwise hold their nodes until timeout.
	rejectWaiting(c.handle, waiting, "PodGroup "+key.String()+" was deleted")
	logger.V(4).Info("PodGroup deleted", "podGroup", key.String(), "rejectedWaiting", len(waiting))
}

// nodeAllocatable is n's name and allocatable, and false for a nil node.
func nodeAllocatable(n *v1.Node) (string, resources.List, bool) {
	if n == nil {
		return "", nil, false
	}
	return n.Name, convert.Resources(n.Status.Allocatable), true
}

// ApplyNode takes a node added or updated.
func (c *Cache) ApplyNode(logger klog.Logger, node *v1.Node) {
	name, alloc, ok := nodeAllocatable(node)
	if !ok {
		return
	}
	c.mu.Lock()
	old := c.nodes[name]
	c.total.Sub(old)
	c.nodes[name] = alloc
	c.total.Add(alloc)
	c.feasible.Rooms.SetNode(node, alloc)
	// The scheduler may requeue a gang on this node event before our total
	// has grown, and our PreFilter then refuses it again with no further
	// event to come: when capacity grows, the cache itself re-activates the
	// gangs it refused as larger than the cluster.
	var act map[string]*v1.Pod
	if len(alloc.Exceeding(old)) > 0 {
		if c.adm.On() {
			// Room appeared (a node added, say by an autoscaler for
			// the units waiting for room): admission looks at once,
			// not at its next period.
			c.adm.KickLocked()
		}
		for key := range c.tooLarge {
			if g := c.groups[key]; g != nil && g.Enqueueable {
				if act == nil {
					act = map[string]*v1.Pod{}
				}
				maps.Copy(act, g.PendingPodsLocked())
			}
		}
	}
	c.mu.Unlock()
	c.activate(logger, act)
}

// DeleteNode takes a node deleted.
func (c *Cache) DeleteNode(node *v1.Node) {
	name, _, ok := nodeAllocatable(node)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.nodes[name]; ok {
		c.total.Sub(old)
		delete(c.nodes, name)
	}
	c.feasible.Rooms.DeleteNode(name)
}
