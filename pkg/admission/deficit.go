package admission

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Capability at placement. Admission may admit a unit on room that
// preemption or reclaim would free (lower-priority pods of its queue, or
// what siblings under a full parent hold above their deserved share). Its
// queue's allocated + inflight is then above capability until those pods
// leave. If the nodes have room, its members would bind without any
// eviction and the queue would end over its capability; so the minimum of
// an admitted, not yet started unit is checked when a member is placed,
// and while it is over, PreFilter fails the member as Unschedulable:
// CalderaReclaim plans with the deficit (queue.CapabilityDeficits), and
// without a plan the unit is released like any gang that cannot be placed.

// deficitsLocked returns how far the unit's queue chain would be over
// capability with its remaining minimum (its inflight) placed; nil for a
// unit that is not admitted, has started, or fits. O(depth x r + subtree x r).
func (a *State) deficitsLocked(u *Unit) []queue.Deficit {
	if u == nil || !u.Admitted || u.Started || u.Inflight.IsZero() {
		return nil
	}
	return queue.CapabilityDeficits(a.Tree, u.Queue, u.Inflight, func(q string) queue.Use {
		var use queue.Use
		if us := a.Usage[q]; us != nil {
			use.Allocated, use.Inflight = us.Allocated, us.Inflight
		}
		use.Extra = a.Extras.byQueue[q]
		if q == u.Queue {
			// The unit's own reservation is the request being checked.
			use.Inflight = use.Inflight.Clone().Sub(u.Inflight)
		}
		return use
	})
}

// DeficitMessage renders the first deficit for PreFilter's status.
func DeficitMessage(key string, ds []queue.Deficit) string {
	d := ds[0]
	names := make([]string, 0, len(d.Over))
	for n := range d.Over {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = resources.Format(n, d.Over[n]) + " " + n
	}
	return fmt.Sprintf("%s would take queue %s %s over its capability: it was admitted on room that lower-priority or over-share pods of the queue hold, and waits for them to be evicted",
		key, d.Queue, strings.Join(parts, ", "))
}

// RefuseDeficitLocked remembers that PreFilter refused unit key for a
// deficit. The scheduler may requeue the pod on a victim's deletion before
// this cache has seen it leave, and PreFilter then refuses it again with no
// further event to come; so when a bound pod leaves, the cache activates
// the refused units' pending pods itself (takeDeficitRefusedLocked).
func (a *State) RefuseDeficitLocked(key queue.Key) {
	if a.deficitRefused == nil {
		a.deficitRefused = map[queue.Key]struct{}{}
	}
	a.deficitRefused[key] = struct{}{}
}

// takeDeficitRefusedLocked returns the pending pods of the units refused
// for a deficit, and forgets them: each is refused, and remembered, again
// if it is still over. O(refused units x members).
func (a *State) takeDeficitRefusedLocked() map[string]*v1.Pod {
	if len(a.deficitRefused) == 0 {
		return nil
	}
	act := map[string]*v1.Pod{}
	for key := range a.deficitRefused {
		u := a.Units[key]
		switch {
		case u == nil:
		case u.Gang != nil:
			maps.Copy(act, u.Gang.PendingPodsLocked())
		case u.Pod != nil && u.Pod.Spec.NodeName == "":
			act[u.Pod.Namespace+"/"+u.Pod.Name] = u.Pod
		}
	}
	clear(a.deficitRefused)
	return act
}

// SingletonDeficitsLocked is PreFilter's capability check for a pod outside
// any gang that queue admission admitted as a group of one: its unit's
// deficits, none without admission. It needs only the cache's read lock:
// every such pod's cycle runs it, and only a refusal writes
// (RefuseDeficitLocked).
func (a *State) SingletonDeficitsLocked(pod *v1.Pod) []queue.Deficit {
	if !a.On() {
		return nil
	}
	return a.deficitsLocked(a.Units[PodUnitKey(pod)])
}

// ReclaimDeficitsLocked converts the unit's deficits for reclaim.Decide.
func (a *State) ReclaimDeficitsLocked(u *Unit) []reclaim.Deficit {
	ds := a.deficitsLocked(u)
	if len(ds) == 0 {
		return nil
	}
	out := make([]reclaim.Deficit, len(ds))
	for i, d := range ds {
		qs := make(map[string]bool, len(d.Subtree))
		for _, q := range d.Subtree {
			qs[q] = true
		}
		out[i] = reclaim.Deficit{Queues: qs, Over: d.Over}
	}
	return out
}

// ReleaseSingletonLocked is ReleaseSingleton for pod, outside any gang.
func (a *State) ReleaseSingletonLocked(pod *v1.Pod, at time.Time) bool {
	if !a.On() {
		return false
	}
	u := a.Units[PodUnitKey(pod)]
	if u == nil || u.Pod == nil || u.Pod.UID != pod.UID || !u.Admitted || u.Pod.Spec.NodeName != "" {
		return false
	}
	if !u.OnPlan && len(a.deficitsLocked(u)) == 0 {
		u.failedFit = true
		return false
	}
	a.MarkFreeRoomOnlyLocked(u, at)
	a.unadmitSingletonLocked(u)
	a.KickLocked()
	return true
}

// unadmitSingletonLocked returns the admitted singleton u to its queue's
// pending units: its reservation leaves the queue's inflight, and its next
// verdict is written afresh.
func (a *State) unadmitSingletonLocked(u *Unit) {
	u.Admitted, u.OnPlan, u.failedFit = false, false, false
	u.retell()
	a.setInflightLocked(u)
	a.setPendingLocked(u)
}

// ReleaseUnplaceableLocked returns to pending the admitted singletons the
// pass's placement found no node for after the scheduler found none either
// (passPlacement.unplaceable). Admitted, such a pod holds its queue's share
// as inflight while the room it was admitted on is gone (taken by another
// queue's pod, say, on the only nodes its selector allows), and the queue's
// other work that fits elsewhere is refused by that share for as long as
// the room stays taken. Pending, it is refused by admission's placement
// check, told so, and admitted again once a node can take it. No
// free-room-only time: no plan failed. A nominated pod is kept: its
// preemption is freeing room the pass does not see yet. O(released).
func (a *State) ReleaseUnplaceableLocked(pl *passPlacement) {
	for _, u := range pl.unplaceable {
		// A nominated pod waits for room a preemption is freeing for it.
		if !u.Admitted || u.Pod == nil || u.Pod.Spec.NodeName != "" || u.Pod.Status.NominatedNodeName != "" {
			continue
		}
		a.unadmitSingletonLocked(u)
	}
	pl.unplaceable = pl.unplaceable[:0]
}

// FreeRoomOnlyFor is how long admission counts no eviction room for a unit
// whose plan found no victims: a victim gang already at its minMember, a
// disruption budget or young pods can make the aggregate room admission
// counts impossible to free. Admitted on it again at once, the unit would
// hold its queue's room (keeping out work that fits) for a plan that
// cannot be made, be released, and repeat. Meanwhile the unit may still be
// admitted on free room; a bound pod leaving ends the time early, since a
// plan may find victims then.
const FreeRoomOnlyFor = 30 * time.Second

// MarkFreeRoomOnlyLocked starts u's free-room-only time at now.
func (a *State) MarkFreeRoomOnlyLocked(u *Unit, now time.Time) {
	if u == nil {
		return
	}
	u.freeRoomUntil = now.Add(FreeRoomOnlyFor)
	if a.freeRoomOnly == nil {
		a.freeRoomOnly = map[queue.Key]struct{}{}
	}
	a.freeRoomOnly[u.Key] = struct{}{}
	if !u.Admitted {
		a.setPendingLocked(u)
	}
}

// clearFreeRoomOnlyLocked ends every unit's free-room-only time: a bound pod
// left, so a plan may find victims now. O(marked units).
func (a *State) clearFreeRoomOnlyLocked() {
	if len(a.freeRoomOnly) == 0 {
		return
	}
	for key := range a.freeRoomOnly {
		if u := a.Units[key]; u != nil && !u.freeRoomUntil.IsZero() {
			u.freeRoomUntil = time.Time{}
			if !u.Admitted {
				a.setPendingLocked(u)
			}
		}
	}
	clear(a.freeRoomOnly)
}

// PlanKeyOf is the key of the preemptor's entry in the eviction book's
// plans: its gang's unit, or the pod itself for a pod outside any gang.
func PlanKeyOf(group string, preemptor types.UID) string {
	if group != "" {
		return group
	}
	return "preemptor:" + string(preemptor)
}
