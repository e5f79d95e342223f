package admission

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// A started gang's members beyond its minimum, seen from the fair shares.
// Each extra is placed only within the deserved share of its queue and
// every ancestor (ExtraFitsLocked), as Volcano's allocate checks every task
// against its queue's deserved share: an extra bound above the share would
// be reclaimed by the next queue whose work asks for the room within its
// own share, which is bind-then-evict. For the shares to leave room for
// extras at all, the extras that wait to be placed are their queue's
// demand when the admission pass divides the cluster, as Volcano counts a
// job's pending tasks in its queue's request: an elastic gang alone on an
// idle cluster still grows into all of it.

// extraDemand is, per queue, what the waiting extras of its started gangs
// ask for. Each unit's part is recorded with the queue it was added to, so
// that moving or dropping the unit subtracts it exactly. Guarded by
// Cache.mu.
type extraDemand struct {
	ByQueue map[string]resources.List
	// Dirty holds the gangs whose waiting members changed without their
	// unit being synced (Reserve, Permit, Unreserve); the admission pass
	// syncs them, so a member event costs O(1).
	Dirty map[gangbook.GroupKey]struct{}
	// refused holds the extras PreFilter refused for their queues'
	// capabilities or shares: no event of the scheduler's requeues them
	// when the shares grow or a bound pod finishes, so the admission pass
	// activates those that fit again.
	refused map[types.UID]gangbook.GroupKey
}

// DemandChangedLocked notes that the waiting demand of the gang of key
// changed, for the next pass to sync; nothing with admission off.
func (a *State) DemandChangedLocked(key gangbook.GroupKey) {
	if !a.On() {
		return
	}
	if a.Demand.Dirty == nil {
		a.Demand.Dirty = map[gangbook.GroupKey]struct{}{}
	}
	a.Demand.Dirty[key] = struct{}{}
}

// syncExtraDemandLocked brings the unit's part of its queue's extra demand
// up to date: what its gang's waiting members ask for once the gang has
// started, nothing before (the minimum is the unit's request then) or for
// a singleton. O(r).
func (a *State) syncExtraDemandLocked(u *Unit) {
	var want resources.List
	if u.Gang != nil && u.Admitted && u.Started && !u.Gang.PendingReq.IsZero() {
		want = u.Gang.PendingReq
	}
	if u.ExtraQueue == u.Queue && u.ExtraDemand.Equal(want) {
		return
	}
	a.Demand.move(u.ExtraQueue, u.ExtraDemand, -1)
	u.ExtraDemand, u.ExtraQueue = nil, u.Queue
	if want != nil {
		u.ExtraDemand = want.Clone()
		a.Demand.move(u.Queue, u.ExtraDemand, +1)
	}
}

// dropExtraDemandLocked takes a unit's part out: the unit is gone.
func (a *State) dropExtraDemandLocked(u *Unit) {
	a.Demand.move(u.ExtraQueue, u.ExtraDemand, -1)
	u.ExtraDemand, u.ExtraQueue = nil, ""
}

func (d *extraDemand) move(q string, l resources.List, sign int) {
	if len(l) == 0 {
		return
	}
	if d.ByQueue == nil {
		d.ByQueue = map[string]resources.List{}
	}
	cur := d.ByQueue[q]
	if sign > 0 {
		cur = cur.Add(l)
	} else {
		cur = cur.Sub(l)
	}
	if cur.IsZero() {
		delete(d.ByQueue, q)
		return
	}
	d.ByQueue[q] = cur
}

// syncDirtyDemandLocked syncs the units of the gangs whose waiting members
// changed since the last pass: O(changed).
func (a *State) syncDirtyDemandLocked() {
	for k := range a.Demand.Dirty {
		if u := a.Units[GangUnitKey(k)]; u != nil {
			a.syncExtraDemandLocked(u)
		}
	}
	clear(a.Demand.Dirty)
}

// shareUseLocked is what queue q holds and reserves now, as the share and
// capability checks of extras read it; own is added to the named queue.
func (a *State) shareUseLocked(q string, ownQueue string, own resources.List) queue.Use {
	var use queue.Use
	if us := a.Usage[q]; us != nil {
		use.Allocated, use.Inflight = us.Allocated, us.Inflight
	}
	use.Extra = a.Extras.byQueue[q]
	if q == ownQueue && own != nil {
		use.Extra = own.Clone().Add(use.Extra)
	}
	return use
}

// refuseExtraLocked remembers an extra PreFilter refused for its queues'
// capabilities or shares, for the pass to activate when it fits again.
func (a *State) refuseExtraLocked(pod *v1.Pod, key gangbook.GroupKey) {
	if a.Demand.refused == nil {
		a.Demand.refused = map[types.UID]gangbook.GroupKey{}
	}
	a.Demand.refused[pod.UID] = key
}

// ForgetRefusedExtraLocked drops uid from the refused extras: it passed
// PreFilter, or left the group.
func (a *State) ForgetRefusedExtraLocked(uid types.UID) {
	if a.On() && a.Demand.refused != nil {
		delete(a.Demand.refused, uid)
	}
}

// refusedExtrasFittingLocked returns the refused extras that now fit their
// queues' capabilities and shares, and forgets them: the pass activates
// them. Members of one gang share an interned request, so the checks run
// once per queue and request: O(refused + queues x requests x subtree).
// groups are the cache's groups by key, preempt its setting
// (extraPreemptibleLocked).
func (a *State) refusedExtrasFittingLocked(groups map[gangbook.GroupKey]*gangbook.Group, preempt bool) map[string]*v1.Pod {
	if len(a.Demand.refused) == 0 {
		return nil
	}
	type check struct {
		queue string
		req   uintptr
		prio  int32
	}
	use := func(q string) queue.Use { return a.shareUseLocked(q, "", nil) }
	fits := map[check]bool{}
	var out map[string]*v1.Pod
	for uid, key := range a.Demand.refused {
		g := groups[key]
		m := (*gangbook.Member)(nil)
		if g != nil {
			m = g.Members[uid]
		}
		u := a.Units[GangUnitKey(key)]
		if m == nil || u == nil || !gangbook.Waiting(m) {
			delete(a.Demand.refused, uid)
			continue
		}
		k := check{u.Queue, mapID(m.Request), gangbook.PodPriority(m.Pod)}
		ok, seen := fits[k]
		if !seen {
			ok, _ = queue.CapabilityFit(a.Tree, u.Queue, m.Request, use)
			if ok {
				ok, _ = queue.ShareFit(a.Shares, u.Queue, m.Request, a.extraPreemptibleLocked(u.Queue, m.Pod, preempt), use)
			}
			fits[k] = ok
		}
		if !ok {
			continue
		}
		delete(a.Demand.refused, uid)
		if out == nil {
			out = map[string]*v1.Pod{}
		}
		out[m.Pod.Namespace+"/"+m.Pod.Name] = m.Pod
	}
	return out
}
