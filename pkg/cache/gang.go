package cache

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// SortInfo is what QueueSort compares for one pod: its queue's priority and
// share, its group's priority and creation time, then the group's key. A pod
// without a group is its own group. QueueSort first ranks pods in three
// classes, by Plain and Priority: system pods (Priority at least the
// system-critical 2000000000, of any profile), then plain pods, then
// Caldera's batch pods, so that no batch backlog delays DaemonSet,
// control-plane or default-scheduler pods.
//
// A pod of a plain profile (Provider.NoteProfile) has Plain set, its own
// priority in Priority and nothing else (its queue fields are zero and
// unused): QueueSort orders two plain pods as PrioritySort does, by
// priority and then the time they entered the scheduling queue, which
// only the queue knows.
type SortInfo struct {
	// Plain: the pod's scheduler is a profile that built no Caldera plugin
	// but the queue sort, whatever the pod's labels say.
	Plain bool
	// QueuePriority and QueueShare describe the group's queue: higher
	// priority first, then the queue furthest below its deserved share.
	QueuePriority int32
	QueueShare    float64
	Priority      int32
	Created       time.Time
	Namespace     string
	Name          string
}

// SortInfo returns the ordering key of pod without allocating.
func (c *Cache) SortInfo(pod *v1.Pod) SortInfo {
	// The profile book takes no lock: a plain pod takes none at all.
	if c.profiles.plain(pod.Spec.SchedulerName) {
		return SortInfo{Plain: true, Priority: gangbook.PodPriority(pod)}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	// After the plain check: a plain pod's group does not matter.
	acct := c.adm.AccountLocked(pod.UID)
	key, ok := groupOfAccounted(pod, acct)
	var info SortInfo
	if !ok {
		info = SortInfo{Priority: gangbook.PodPriority(pod), Created: pod.CreationTimestamp.Time, Namespace: pod.Namespace, Name: pod.Name}
	} else if g := c.groups[key]; g != nil && len(g.Members) > 0 {
		info = SortInfo{Priority: g.Priority, Created: g.Created, Namespace: key.Namespace, Name: key.Name}
	} else {
		// The scheduler's informer may deliver a pod before ours does.
		info = SortInfo{Priority: gangbook.PodPriority(pod), Created: pod.CreationTimestamp.Time, Namespace: key.Namespace, Name: key.Name}
	}
	var q string
	if acct != nil {
		q = acct.Queue
	}
	qs := c.adm.QueueSortLocked(q)
	info.QueuePriority, info.QueueShare = qs.Priority, qs.Share
	return info
}

// groupOfAccounted is GroupKeyOf(pod), read from the pod's admission
// account when it names a unit: the pod event that made the account worked
// the group out, so a queue-sort comparison reads no label or annotation.
func groupOfAccounted(pod *v1.Pod, acct *admission.PodAcct) (gangbook.GroupKey, bool) {
	if acct == nil || acct.Unit.IsZero() {
		return gangbook.GroupKeyOf(pod)
	}
	if acct.Unit.Kind == queue.KindGroup {
		return gangbook.GroupKey{Namespace: acct.Unit.Namespace, Name: acct.Unit.Name}, true
	}
	return gangbook.GroupKey{}, false
}

// Enqueueable answers PreEnqueue for a member pod: whether its PodGroup exists
// and has enough members. isMember is false for pods without the label.
func (c *Cache) Enqueueable(pod *v1.Pod) (isMember, ok bool, msg string) {
	c.markQueueSeen()
	key, member := gangbook.GroupKeyOf(pod)
	if !member {
		return false, true, ""
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.membersSynced.fired() {
		// Read under mu, which membersListed holds as it flips it: a pod
		// refused here is then activated by it.
		return true, false, "waiting for the scheduler's pod informer to list gang members"
	}
	g := c.groups[key]
	if g == nil {
		return true, false, "waiting for PodGroup " + key.String()
	}
	if g.Enqueueable {
		return true, true, ""
	}
	ok, msg = gang.Enqueueable(key.String(), g.Obj != nil, g.Spec, g.Counts)
	return true, ok, msg
}

// markQueueSeen records that the scheduling queue runs PreEnqueue (see activate).
func (c *Cache) markQueueSeen() {
	if !c.queueSeen.Load() {
		c.queueSeen.Store(true)
	}
}

// PreFilter records the group's first scheduling attempt and checks that it is
// neither backing off nor larger than the cluster, and that its members fit
// their queues' capabilities: a member beyond the gang's minimum on its own
// (ExtraFitsLocked), the minimum as a whole (admission's deficit check). A pod outside any
// gang gets only the capability check.
func (c *Cache) PreFilter(pod *v1.Pod, at time.Time) (isMember bool, code admission.PreFilterCode, msg string) {
	key, member := gangbook.GroupKeyOf(pod)
	if !member {
		// Read under the read lock, written under the write lock only on
		// a refusal (SingletonDeficitsLocked).
		c.mu.RLock()
		code, why := c.adm.AdmissionHoldLocked(pod, c.groups)
		var ds []queue.Deficit
		if code == admission.PreFilterOK {
			ds = c.adm.SingletonDeficitsLocked(pod)
		}
		c.mu.RUnlock()
		if code != admission.PreFilterOK {
			return false, code, why
		}
		if len(ds) == 0 {
			return false, admission.PreFilterOK, ""
		}
		c.mu.Lock()
		c.adm.RefuseDeficitLocked(admission.PodUnitKey(pod))
		c.mu.Unlock()
		return false, admission.PreFilterCapabilityDeficit, admission.DeficitMessage("pod "+pod.Namespace+"/"+pod.Name, ds)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if code, why := c.adm.AdmissionHoldLocked(pod, c.groups); code != admission.PreFilterOK {
		// Before the first attempt is stamped: the gang's timeout runs
		// from its admission, not from the wait for new nodes.
		return true, code, why
	}
	g := c.groups[key]
	if g == nil || g.Obj == nil {
		return true, admission.PreFilterNoGroup, "waiting for PodGroup " + key.String()
	}
	if g.FirstAttempt.IsZero() {
		g.FirstAttempt = at
		c.dirty[key] = struct{}{}
	}
	if g.Backoff.Active(at) {
		return true, admission.PreFilterBackoff, fmt.Sprintf("PodGroup %s is backing off until %s after: %s",
			key, g.Backoff.Until.Format(time.RFC3339), g.Unschedulable)
	}
	need := g.MinRequestLocked()
	if over := need.Exceeding(c.total); len(over) > 0 {
		name := over[0]
		msg := fmt.Sprintf("PodGroup %s needs %s %s for its %d minimum members, more than the cluster's total allocatable %s",
			key, resources.Format(name, need[name]), name, g.Spec.MinMember, resources.Format(name, c.total[name]))
		if g.Unschedulable != msg {
			g.Unschedulable = msg
			c.dirty[key] = struct{}{}
		}
		c.tooLarge[key] = struct{}{}
		return true, admission.PreFilterTooLarge, msg
	}
	delete(c.tooLarge, key)
	code, msg = c.adm.ExtraFitsLocked(g, pod, c.preempt)
	return true, code, msg
}

// MinRequest returns what the group of pod needs before it can run (see gang.MinRequest).
func (c *Cache) MinRequest(key gangbook.GroupKey) (resources.List, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[key]
	if g == nil {
		return nil, false
	}
	return g.MinRequestLocked().Clone(), true
}

// Reserve records that the scheduler reserved a node for a member. pod is
// the scheduler's assumed copy: its spec.nodeName is the reserved node.
func (c *Cache) Reserve(pod *v1.Pod) {
	key, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, m := c.cycleMemberLocked(key, pod)
	if !m.State.Assigned {
		countLocked(g, m, -1, c.adm)
		m.State.Reserved = true
		m.ReservedOn = pod.Spec.NodeName
		countLocked(g, m, +1, c.adm)
		c.adm.ReserveExtraLocked(g, pod.UID, m)
	}
	c.dirty[key] = struct{}{}
}

// PermitResult is Permit's answer for one member.
type PermitResult struct {
	// Allow: the gang has its minimum; the member goes on to bind.
	Allow bool
	// Timeout is how long the member may wait when not allowed.
	Timeout time.Duration
	// Message says what the member waits for.
	Message string
}

// Permit decides whether a reserved member may bind. When the gang reaches its
// minimum, every sibling waiting in Permit is allowed at once, through
// pluginName's waiting-pod handle.
func (c *Cache) Permit(logger klog.Logger, pod *v1.Pod, at time.Time, defaultTimeout time.Duration, pluginName string) PermitResult {
	key, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return PermitResult{Allow: true}
	}
	c.mu.Lock()
	g := c.groups[key]
	if g == nil || g.Obj == nil {
		c.mu.Unlock()
		// The PodGroup vanished while the pod was in flight: do not bind it
		// alone; a short wait gets it rejected and retried through PreEnqueue.
		return PermitResult{Timeout: time.Second, Message: "PodGroup " + key.String() + " not found"}
	}
	_, m := c.cycleMemberLocked(key, pod)
	if !m.State.Reserved && !m.State.Assigned {
		countLocked(g, m, -1, c.adm)
		m.State.Reserved = true
		m.ReservedOn = pod.Spec.NodeName
		countLocked(g, m, +1, c.adm)
	}
	if ready, msg := g.BarrierOpen(); !ready {
		timeout := gang.PermitTimeout(g.Spec, defaultTimeout)
		countLocked(g, m, -1, c.adm)
		m.State.Waiting = true
		m.WaitingSince = at
		m.Released = false
		countLocked(g, m, +1, c.adm)
		c.dirty[key] = struct{}{}
		c.mu.Unlock()
		return PermitResult{Timeout: timeout, Message: msg}
	}
	allow, firstWaiting := c.readyLocked(g)
	c.mu.Unlock()
	c.allowWaiting(at, allow, firstWaiting, pluginName)
	logger.V(4).Info("Gang ready", "podGroup", key.String(), "allowedWaiting", len(allow))
	return PermitResult{Allow: true}
}

// readyLocked marks g's members waiting in Permit as allowed, ends its
// backoff and reason, and returns the members to allow and when the first
// of them began waiting: g has its minimum placed.
func (c *Cache) readyLocked(g *gangbook.Group) (allow []types.UID, firstWaiting time.Time) {
	for uid, o := range g.Members {
		if o.State.Waiting {
			if firstWaiting.IsZero() || o.WaitingSince.Before(firstWaiting) {
				firstWaiting = o.WaitingSince
			}
			countLocked(g, o, -1, c.adm)
			o.State.Waiting = false
			countLocked(g, o, +1, c.adm)
			allow = append(allow, uid)
		}
	}
	g.Backoff = gang.BackoffState{}
	g.Unschedulable = ""
	c.dirty[g.Key] = struct{}{}
	return allow, firstWaiting
}

// allowWaiting lets the members readyLocked returned bind, through
// pluginName's waiting-pod handle; called without c.mu held.
func (c *Cache) allowWaiting(at time.Time, allow []types.UID, firstWaiting time.Time, pluginName string) {
	if len(allow) > 0 {
		observePermitWait(at.Sub(firstWaiting))
	}
	for _, uid := range allow {
		if wp := c.handle.GetWaitingPod(uid); wp != nil {
			wp.Allow(pluginName)
		}
	}
}

// Unreserve records that a member lost its node (rejected in Permit, timed out,
// or failed to bind) and releases the gang: see Release.
func (c *Cache) Unreserve(logger klog.Logger, pod *v1.Pod, at time.Time, policy gang.Backoff, defaultTimeout time.Duration) {
	key, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return
	}
	reason, why := "a member failed to bind", RejectBindFailure
	echo := false
	c.mu.Lock()
	c.adm.DropExtraLocked(pod.UID)
	if g := c.groups[key]; g != nil {
		if m := g.Members[pod.UID]; m != nil {
			// A member that a release rejected: its Unreserve is that release's
			// echo, not a new failure. Releasing again would replace the
			// failure's reason and reject the other siblings once more.
			echo, m.Released = m.Released, false
			if m.State.Waiting {
				timeout := gang.PermitTimeout(g.Spec, defaultTimeout)
				if !at.Before(m.WaitingSince.Add(timeout)) {
					reason = fmt.Sprintf("timed out after %v waiting in Permit with %d/%d members placed", timeout, g.Counts.Placed, g.Spec.MinMember)
					why = RejectPermitTimeout
				} else {
					reason, why = "a member was rejected while waiting in Permit", RejectPermitRejected
				}
			}
			if m.Confirmed {
				countLocked(g, m, -1, c.adm)
				m.State.Reserved = false
				m.State.Waiting = false
				m.ReservedOn = ""
				countLocked(g, m, +1, c.adm)
			} else {
				c.removeMemberLocked(key, pod.UID)
			}
		}
	}
	c.mu.Unlock()
	if !echo && c.Release(logger, key, at, policy, reason) {
		countRejection(why)
	}
}

// Unschedulable records that a member found no node (PostFilter) and no
// plan to evict was made, and releases the gang: see Release. Admission then
// counts only free room for the gang for a while (MarkFreeRoomOnlyLocked).
func (c *Cache) Unschedulable(logger klog.Logger, pod *v1.Pod, at time.Time, policy gang.Backoff, reason string) {
	key, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return
	}
	c.mu.Lock()
	if c.adm.On() {
		c.adm.MarkFreeRoomOnlyLocked(c.adm.Units[admission.GangUnitKey(key)], at)
	}
	c.mu.Unlock()
	if c.Release(logger, key, at, policy, reason) {
		countRejection(RejectUnschedulable)
	}
}

// Release makes a gang that cannot complete hold nothing: unless the gang
// already has its minimum placed, every member waiting in Permit is rejected
// and the group backs off, its members re-activated when the backoff ends.
// Returns whether a release happened.
func (c *Cache) Release(logger klog.Logger, key gangbook.GroupKey, at time.Time, policy gang.Backoff, reason string) bool {
	c.mu.Lock()
	g := c.groups[key]
	// A gang backing off was released already and has nothing waiting; one
	// with its minimum placed needs no release. Nor does one whose reclaim
	// or preemption plan is still evicting: the plan made room for exactly
	// its members that do not hold a node, so the members waiting in Permit
	// keep theirs and the gang keeps its admission (CalderaReclaim refuses
	// an unadmitted preemptor); its members fail Filter only until the
	// victims are gone, and are retried then.
	if g == nil || g.Obj == nil || g.Backoff.Active(at) || c.evictions.GangPlan(key) {
		c.mu.Unlock()
		return false
	}
	if ready, _ := g.BarrierOpen(); ready {
		c.mu.Unlock()
		return false
	}
	var waiting []types.UID
	for uid, m := range g.Members {
		if m.State.Waiting {
			m.Released = true
			waiting = append(waiting, uid)
		}
	}
	msg := gang.UnschedulableMessage(g.Spec, g.Counts, reason)
	g.Unschedulable = msg
	c.adm.UnadmitLocked(g, c.dirty)
	c.dirty[key] = struct{}{}
	var started bool
	g.Backoff, started = policy.Fail(g.Backoff, at)
	if started && g.Backoff.Active(at) {
		if g.BackoffTimer != nil {
			g.BackoffTimer.Stop()
		}
		g.BackoffTimer = time.AfterFunc(g.Backoff.Until.Sub(at), func() { c.endBackoff(logger, key) })
	}
	until := g.Backoff.Until // read under the lock: another release may write it
	c.mu.Unlock()
	rejectWaiting(c.handle, waiting, msg)
	logger.V(3).Info("Gang released", "podGroup", key.String(), "rejectedWaiting", len(waiting), "reason", reason, "backoffUntil", until)
	return true
}

// RejectWaiting rejects the members of pod's gang that wait in Permit, without
// starting a backoff: PostFilter calls it when the plugin's own PreFilter
// refused a member (the gang outgrew the cluster), so that siblings that got
// through a moment earlier do not hold nodes until their timeout.
func (c *Cache) RejectWaiting(pod *v1.Pod, msg string) {
	key, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return
	}
	c.mu.Lock()
	var waiting []types.UID
	if g := c.groups[key]; g != nil {
		for uid, m := range g.Members {
			if m.State.Waiting {
				m.Released = true
				waiting = append(waiting, uid)
			}
		}
	}
	c.mu.Unlock()
	if len(waiting) > 0 {
		countRejection(RejectTooLarge)
	}
	rejectWaiting(c.handle, waiting, msg)
}

func (c *Cache) endBackoff(logger klog.Logger, key gangbook.GroupKey) {
	c.mu.Lock()
	g := c.groups[key]
	var pods map[string]*v1.Pod
	if g != nil {
		g.BackoffTimer = nil
		if g.Enqueueable {
			pods = g.PendingPodsLocked()
		}
	}
	c.mu.Unlock()
	c.activate(logger, pods)
}

// rejectWaiting rejects, with msg, those of uids that wait in h's Permit.
func rejectWaiting(h fwk.Handle, uids []types.UID, msg string) {
	for _, uid := range uids {
		if wp := h.GetWaitingPod(uid); wp != nil {
			wp.Reject(gangPluginName, msg)
		}
	}
}

// gangPluginName is the plugin name waiting pods are allowed and rejected
// under when the cache decides outside a Permit call (a release, a lowered
// minMember); the plugin package waits under its own Name, and this matches it.
const gangPluginName = "CalderaGang"

// countLocked adds member m's state to g's aggregates (delta +1) or takes
// it out (delta -1), and a, the admission side (off: none), learns when
// g's demand changed. Callers take a member out before they change it and
// add it back after.
func countLocked(g *gangbook.Group, m *gangbook.Member, delta int, a *admission.State) {
	if g.Count(m, delta) {
		a.DemandChangedLocked(g.Key)
	}
}

// ReleaseSingleton returns an admitted pod outside any gang to its queue's
// pending units when no plan frees the room it was admitted on: it was
// admitted over capability, or on room only evictions free (onPlan). Like a
// released gang, it must not keep room its queue does not have, and
// admission counts only free room for it for a while. A pod admitted on
// free room that failed to fit is not released here: its failure may be
// passing (say, room nominated to others) and the scheduler retries it; the
// next admission pass releases it if no node's free room takes it
// (ReleaseUnplaceableLocked). It reports whether it released the pod.
// O(log pending).
func (c *Cache) ReleaseSingleton(pod *v1.Pod, at time.Time) bool {
	if _, member := gangbook.GroupKeyOf(pod); member {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adm.ReleaseSingletonLocked(pod, at)
}
