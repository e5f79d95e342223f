package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Members beyond a gang's minimum ("extras"). Admission reserves a gang's
// minimum in its queue; an elastic gang's other members were never admitted,
// so each is checked against the capability of its queue and every ancestor
// when it is placed (Cache.PreFilter). The scheduler assumes a pod at Reserve
// and binds it later, asynchronously: the book below counts the extras that
// hold a node but are not bound yet, so that a burst of them cannot all pass
// the check before the first bind is seen.

// extraBook is, per queue, what reserved but unbound extras request, and per
// such member the entry it was counted with (its presence is the member's
// "counted" flag). The entry keeps the queue and request it was added with,
// so that its removal is exact even if the unit moved queue or the pod was
// resized meanwhile. Guarded by Cache.mu; O(1) per event.
type extraBook struct {
	Holds   map[types.UID]extraHold
	byQueue map[string]resources.List
}

// extraHold is one reserved extra: its queue and request, and the node it
// holds and its gang's unit, for admission's placement check
// (holdReservedExtras).
type extraHold struct {
	queue string
	req   resources.List
	node  string
	unit  queue.Key
}

func (b *extraBook) add(uid types.UID, h extraHold) {
	if _, ok := b.Holds[uid]; ok {
		return
	}
	if b.Holds == nil {
		b.Holds, b.byQueue = map[types.UID]extraHold{}, map[string]resources.List{}
	}
	b.Holds[uid] = h
	b.byQueue[h.queue] = b.byQueue[h.queue].Add(h.req)
}

// Drop forgets uid's entry: the member is bound (its request is now in its
// queue's allocated, in the same critical section), unreserved or deleted.
func (b *extraBook) Drop(uid types.UID) {
	h, ok := b.Holds[uid]
	if !ok {
		return
	}
	delete(b.Holds, uid)
	if l := b.byQueue[h.queue].Sub(h.req); l.IsZero() {
		delete(b.byQueue, h.queue)
	} else {
		b.byQueue[h.queue] = l
	}
}

// extraKind says how a member of g is placed.
type extraKind int

const (
	// minimumMember: the gang has fewer than minMember placed besides it;
	// admission reserved room for it.
	minimumMember extraKind = iota
	// extraMember: the gang has started (minMember bound); the member is
	// checked against capability and counted in the book when reserved.
	extraMember
	// earlyExtra: the gang has minMember placed but not yet bound. Its
	// unit's inflight is request - held, which a bound extra would lower
	// as if it were one of the minimum, so extras wait for the minimum to
	// bind (onMember activates them then).
	earlyExtra
)

// extraKindLocked classifies member uid of g; only with admission on.
func (a *State) extraKindLocked(g *gangbook.Group, uid types.UID) (extraKind, *Unit) {
	u := a.Units[GangUnitKey(g.Key)]
	min := int(g.Spec.MinMember)
	if min <= 0 {
		return minimumMember, u
	}
	if g.Counts.Bound >= min || (u != nil && u.Started) {
		return extraMember, u
	}
	placed := g.Counts.Placed
	m := g.Members[uid]
	if m != nil && m.State.Placed() {
		placed--
	}
	if placed >= min && !g.NeededByTask(m) {
		return earlyExtra, u
	}
	return minimumMember, u
}

// ExtraFitsLocked is PreFilter's check for a member beyond the minimum:
// whether its queue and every ancestor stay within capability, and within
// the deserved share of the last admission pass (extrademand.go). A member
// refused for the share kicks a pass: its demand may not have been counted
// yet, and the pass activates it when it fits; preempt is the cache's
// setting (extraPreemptibleLocked). O(depth x r) plus one lookup per queue
// under the top-level ancestor.
func (a *State) ExtraFitsLocked(g *gangbook.Group, pod *v1.Pod, preempt bool) (PreFilterCode, string) {
	if !a.On() {
		return PreFilterOK, ""
	}
	kind, u := a.extraKindLocked(g, pod.UID)
	switch {
	case kind == earlyExtra:
		return PreFilterExtraEarly, fmt.Sprintf("PodGroup %s has its %d minimum members placed; members beyond them wait for those to bind",
			g.Key, g.Spec.MinMember)
	case kind == minimumMember:
		if ds := a.deficitsLocked(u); len(ds) > 0 {
			a.RefuseDeficitLocked(u.Key)
			return PreFilterCapabilityDeficit, DeficitMessage("PodGroup "+g.Key.String(), ds)
		}
		return PreFilterOK, ""
	case u == nil:
		return PreFilterOK, ""
	}
	req := convert.PodRequest(pod)
	if m := g.Members[pod.UID]; m != nil {
		req = m.Request
	}
	// The member handler sees a bind before this informer's admission
	// handler may: the unit then reserves nothing (started) while its
	// queue's allocated lacks the member just bound. What the unit's
	// minimum asks beyond what it is seen to hold is counted for it.
	// Only unfinished bound members count: Counts.Bound counts finished
	// ones too, which hold nothing, and counting them charged a gang whose
	// members failed its minimum again for the replacements, refusing
	// them forever under a capability within twice the minimum. (A member
	// that finished unbound is subtracted too; the window this covers is
	// then not compensated, which errs towards admitting.)
	var own resources.List
	if u.Admitted && g.Counts.Bound-g.Counts.Succeeded-g.Counts.Failed >= int(g.Spec.MinMember) {
		for k, v := range u.Request {
			if d := v - u.Held[k] - u.Inflight[k]; d > 0 {
				if own == nil {
					own = resources.List{}
				}
				own[k] = d
			}
		}
	}
	use := func(q string) queue.Use { return a.shareUseLocked(q, u.Queue, own) }
	if ok, msg := queue.CapabilityFit(a.Tree, u.Queue, req, use); !ok {
		// Room under a capability comes back when a bound pod leaves or
		// finishes, which kicks a pass; a finish is no pod deletion, so
		// no event of the scheduler's would requeue the member.
		a.refuseExtraLocked(pod, g.Key)
		return PreFilterOverCapability, msg
	}
	if ok, msg := queue.ShareFit(a.Shares, u.Queue, req, a.extraPreemptibleLocked(u.Queue, pod, preempt), use); !ok {
		a.refuseExtraLocked(pod, g.Key)
		a.KickLocked()
		return PreFilterOverShare, msg
	}
	a.ForgetRefusedExtraLocked(pod.UID)
	return PreFilterOK, ""
}

// extraPreemptibleLocked is what the share check of an extra may count as
// swapped (queue.ShareFit): the room lower-priority pods of its queue hold,
// when preemption is on (preempt, the cache's setting).
func (a *State) extraPreemptibleLocked(q string, pod *v1.Pod, preempt bool) resources.List {
	if !preempt {
		return nil
	}
	return a.preemptibleLocked(q, gangbook.PodPriority(pod))
}

// ReserveExtraLocked counts member m of g in the book when Reserve places it
// beyond the gang's minimum.
func (a *State) ReserveExtraLocked(g *gangbook.Group, uid types.UID, m *gangbook.Member) {
	if !a.On() || m.State.Assigned {
		return
	}
	if kind, u := a.extraKindLocked(g, uid); kind != minimumMember && u != nil {
		a.Extras.add(uid, extraHold{queue: u.Queue, req: m.Request, node: m.ReservedOn, unit: u.Key})
	}
}

// DropExtraLocked forgets the member's entry in the book, if any.
func (a *State) DropExtraLocked(uid types.UID) {
	if a.On() {
		a.Extras.Drop(uid)
	}
}
