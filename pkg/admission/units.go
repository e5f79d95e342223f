package admission

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Unit is one unit of admission: a gang (a queue.KindGroup key) or a singleton
// pod (a queue.KindPod key). The fields are laid out by size, pointers and
// words first, the small ones last, without padding between them: 232
// bytes, the 240-byte size class, where declared by topic they took 256,
// and a restart holds one unit per bound singleton.
type Unit struct {
	Key   queue.Key
	Gang  *gangbook.Group // nil for singletons
	Pod   *v1.Pod         // the singleton's pod
	Queue string
	// Asked is the queue the unit's labels name when no Queue has that
	// name (queue is then MissingQueue), else "".
	Asked   string
	created time.Time
	Request resources.List
	// Held is what the unit's bound, unfinished pods request; inflight is
	// what it adds to its queue's inflight: request - held while admitted
	// (nil when nothing).
	Held     resources.List
	Inflight resources.List
	// admittedMin and admittedMinRes are the gang's minMember and
	// minResources when it was admitted: a spec raised past them before the
	// gang starts asks for more than admission checked (raised, which
	// decideAgain reads).
	admittedMinRes resources.List
	// freeRoomUntil: admission counts no eviction room for the unit before
	// then (queue.Group.FreeRoomUntil); set when its plan found no victims.
	freeRoomUntil time.Time
	// notice is what the unit was last told (noteLocked), nil until its
	// first verdict is written.
	notice *unitNotice
	// roomVerdict is the unit's last refusal when that was for capacity
	// (roomwait.go), nil otherwise: while it is set and the unit is not
	// admitted, its pods go through PreEnqueue and are rejected in
	// PreFilter, as Unschedulable, with this verdict between passes (when
	// an event has sent the unit back to be decided afresh). A pointer, so
	// that units that never wait for room (most, by far) carry no Decision.
	roomVerdict *queue.Decision
	// ExtraDemand is the unit's part of ExtraQueue's extra demand
	// (extrademand.go); nil when none.
	ExtraDemand resources.List
	ExtraQueue  string

	Priority    int32
	Members     int32
	Min         int32
	admittedMin int32 // see admittedMinRes

	Admitted bool
	// annotated: the PodGroup carries the admitted-at annotation.
	annotated bool
	// Started: the admitted gang had minMember members bound; it reserves
	// nothing from then on.
	Started bool
	// heldShared: held is the one bound pod's request list, which pods
	// share (interned), so it must be copied before it is changed. A bound
	// singleton then holds no list of its own.
	heldShared bool
	// OnPlan: admitted on room only a reclaim or preemption plan frees
	// (queue.Decision.OnPlan).
	OnPlan bool
	// failedFit: a singleton admitted on free room that the scheduler
	// tried and found no node for since (ReleaseSingleton); the next pass
	// releases it if it fits no node of its free room either.
	failedFit bool
	// planBooked: counted in State.PlanWaiting (onPlan and still
	// reserving room).
	planBooked bool
	// waitObserved: the unit's first admission is in admission_wait_seconds.
	waitObserved bool
	// counted is the count of its queue's QueueCounts the unit is in.
	counted unitState
}

// unitNotice is the last verdict written for a unit. A pointer in unit,
// made at the first verdict: most units are never told anything (the bound
// singletons a restart finds, singletons admitted at once), and a restart
// builds one unit per bound singleton.
type unitNotice struct {
	// id is the last admission Event written ("" once it is to be written
	// again); stage and at say which check a refusal named (with its queue
	// and resource) and when it was written, to defer rewrites that change
	// only the numbers (VerdictRefresh).
	id, stage string
	at        time.Time
	// msg is the refusal the unit was last told ("" after an admission):
	// what a Volcano PodGroup's status shows, so that it changes only as
	// often as the Event does.
	msg string
}

// told reports whether a verdict of u's stands written.
func (u *Unit) told() bool { return u.notice != nil && u.notice.id != "" }

// retell makes u's next verdict be written, whatever it is.
func (u *Unit) retell() {
	if u.notice != nil {
		u.notice.id = ""
	}
}

// refusal is the refusal u was last told, "" when none or after an
// admission.
func (u *Unit) refusal() string {
	if u.notice == nil {
		return ""
	}
	return u.notice.msg
}

// GangUnitKey is the admission unit of the gang of k.
func GangUnitKey(k gangbook.GroupKey) queue.Key { return queue.GroupUnit(k.Namespace, k.Name) }

// PodUnitKey is the singleton unit of pod p, sharing its strings.
func PodUnitKey(p *v1.Pod) queue.Key { return queue.PodUnit(p.Namespace, p.Name) }

// queueSort is what QueueSort reads about a queue.
type queueSort struct {
	Priority int32
	Share    float64
}

// QueueSortInfo returns the queue priority and share QueueSort compares for
// pod, without allocating.
func (a *State) QueueSortLocked(queueName string) queueSort {
	if a == nil {
		return queueSort{}
	}
	return a.Sorting[queueName]
}

// AccountLocked is pod uid's admission account, nil without admission or
// without one.
func (a *State) AccountLocked(uid types.UID) *PodAcct {
	if a == nil {
		return nil
	}
	return a.Pods[uid]
}

// resolveQueueLocked names the queue of a group, folded (foldQueueLocked):
// the one its PodGroup names (groupspec.Spec.Queue, "" for none), else the
// pod's label, else the namespace's, else the default queue. asked is the
// name asked for when it was folded, else "".
func (a *State) resolveQueueLocked(named string, pod *v1.Pod, ns string) (q, asked string) {
	return a.foldQueueLocked(a.askedQueueLocked(named, pod, ns))
}

// askedQueueLocked is the queue name a group asks for.
func (a *State) askedQueueLocked(named string, pod *v1.Pod, ns string) string {
	if named != "" {
		return named
	}
	if pod != nil {
		if q := pod.Labels[qapi.QueueLabel]; q != "" {
			return q
		}
	}
	if q := a.nsQueue[ns]; q != "" {
		return q
	}
	return a.Opts.DefaultQueue
}

// SyncGangUnitLocked brings a gang's admission unit up to date after any
// change to the group; O(log n) in the number of pending groups. dirty is
// the cache's set of groups whose status is to be written (a gang whose
// spec was raised is released), synced whether the scheduler's pod
// informer has listed the members (short.go, overdue.go): both are the
// cache's, read under its lock.
func (a *State) SyncGangUnitLocked(g *gangbook.Group, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	if !a.On() {
		return
	}
	uk := GangUnitKey(g.Key)
	u := a.Units[uk]
	if g.Obj == nil {
		if u != nil {
			a.dropUnitLocked(u)
		}
		return
	}
	fresh := u == nil
	if fresh {
		u = &Unit{Key: uk, Gang: g}
		a.Units[uk] = u
		// Bound pods accounted before the unit existed (its PodGroup was
		// recreated, or came after them) are held by it from now on; the
		// move below adds them to its queue.
		for _, p := range a.UnitPods[uk] {
			if p.Bound {
				if old := a.Usage[p.Queue]; old != nil && p.Queue != "" {
					old.Allocated.Sub(p.Req)
				}
				u.Hold(p.Req)
			}
		}
	}
	var first *v1.Pod
	for _, m := range g.Members {
		first = m.Pod
		break
	}
	q, asked := a.resolveQueueLocked(g.Obj.Queue, first, g.Key.Namespace)
	u.Asked = asked
	a.moveUnitLocked(u, q)
	u.Priority, u.created = g.Priority, g.Created
	u.Members, u.Min = promisedMembers(g), g.Spec.MinMember
	annotated := g.Obj.Admitted
	if fresh && annotated {
		// Admitted by an earlier leader or process: never re-admit past capacity.
		u.Admitted = true
		u.noteAdmittedSpec(g)
		a.Pending.Delete(uk)
	}
	u.annotated = annotated
	// The request follows the members and minMember until the gang starts
	// (cached in the group, so this is O(1) unless they changed): a gang
	// admitted by an earlier process is installed from its annotation
	// before the scheduler's pod informer has delivered its members, and a
	// request frozen then would reserve nothing.
	u.Request = g.MinRequestLocked()
	if u.Admitted && u.decideAgain(g) {
		u.Started = false
		a.UnadmitLocked(g, dirty)
	}
	a.Short.Track(u, synced)
	a.Overdue.Track(g, u, synced)
	if !u.Admitted {
		a.setPendingLocked(u)
		a.KickLocked()
	}
	a.setInflightLocked(u)
}

// decideAgain reports whether admitted gang u, of group g, must go back to
// its queue to be decided again. O(resources).
//
// Its spec was raised before it started: admission checked the smaller
// minimum only (capability, share, placement); kept, the larger one would
// be reserved unchecked, and a gang its nodes can never hold would keep
// its queue's room from work that fits. Decided again, it is admitted at
// once if it still fits. A gang that started keeps its admission, as when
// it is released.
//
// Or it started and every member is gone (evicted or deleted): it runs
// nothing. Back in its queue, its capability and share are checked anew,
// and its members' room waits for a pass that keeps the reservations made
// since it started. Kept admitted, it would hold its queue's room for
// good, retrying one member at a time, and its members, placed as an
// admitted gang's, would take room another gang had reserved. Bound
// members that left the scheduler's informer may have finished, the
// finished-member informer not caught up yet (Finishing): until it has, or
// their deadline has passed (the status writer's next look syncs the unit
// again), the gang has not lost them.
func (u *Unit) decideAgain(g *gangbook.Group) bool {
	if !u.Started {
		return u.raised(g)
	}
	return g.Counts.Bound == 0 && len(g.Finishing) == 0
}

// noteAdmittedSpec records the spec the gang's admission was decided for.
func (u *Unit) noteAdmittedSpec(g *gangbook.Group) {
	u.admittedMin, u.admittedMinRes = g.Spec.MinMember, g.Spec.MinResources
}

// raised reports whether g's spec asks for more than when u was admitted:
// a larger minMember, or minResources above the admitted ones in some
// resource. O(resources).
func (u *Unit) raised(g *gangbook.Group) bool {
	if g.Spec.MinMember > u.admittedMin {
		return true
	}
	return u.admittedMinRes != nil && g.Spec.MinResources != nil && !g.Spec.MinResources.FitsIn(u.admittedMinRes)
}

// UnadmitLocked returns a released gang to its queue's pending groups: an
// admitted gang that could not be placed must not keep its queue's room
// reserved while others wait, or two admitted gangs could block each other.
// dirty is the cache's set of groups whose status is to be written.
func (a *State) UnadmitLocked(g *gangbook.Group, dirty map[gangbook.GroupKey]struct{}) {
	if !a.On() {
		return
	}
	u := a.Units[GangUnitKey(g.Key)]
	// A gang that started (had minMember bound) keeps its admission when it
	// is released, as a running Volcano job stays Inqueue: its replacement
	// members are scheduled next to the running ones. Sent back to pending,
	// its request would count its running members' resources a second
	// time, on top of the cluster's used amount, and could never fit again.
	if u == nil || !u.Admitted || u.Started {
		return
	}
	u.Admitted, u.Started = false, false
	u.retell() // the next admission writes its Event and annotation again
	dirty[g.Key] = struct{}{}
	a.setInflightLocked(u)
	u.Request = g.MinRequestLocked()
	a.setPendingLocked(u)
	a.Writes.release(u.Key, g.Key.Named(), g.Obj.Source)
	a.KickLocked()
}

// dropUnitLocked forgets a unit: its group or pod is gone.
func (a *State) dropUnitLocked(u *Unit) {
	a.Pending.Delete(u.Key)
	a.Writes.forgetUnit(u.Key)
	if q := a.Usage[u.Queue]; q != nil {
		q.Inflight.Sub(u.Inflight)
	}
	a.bookPlan(u, false)
	a.uncountLocked(u)
	delete(a.Units, u.Key)
	a.dropExtraDemandLocked(u)
	a.Feas.track(u, true)
	a.listSoloLocked(u) // an account still naming the key (another uid's) stays found
	if len(a.UnitPods[u.Key]) == 0 {
		delete(a.UnitPods, u.Key)
	}
	a.KickLocked()
}

// moveUnitLocked sets the unit's queue, moving what it holds and reserves.
func (a *State) moveUnitLocked(u *Unit, q string) {
	if u.Queue == q {
		return
	}
	if old := a.Usage[u.Queue]; old != nil && u.Queue != "" {
		old.Allocated.Sub(u.Held)
		old.Inflight.Sub(u.Inflight)
	}
	a.uncountLocked(u)
	u.Queue = q
	a.countLocked(u)
	nu := a.usageLocked(q)
	nu.Allocated.Add(u.Held)
	nu.Inflight.Add(u.Inflight)
	// Re-tag the pods accounted to the unit, so that their later events
	// subtract from the right queue: O(unit size), never a scan of all pods.
	for _, p := range a.UnitPods[u.Key] {
		a.retagLocked(p, q)
	}
	if p := a.soloLocked(u); p != nil {
		a.retagLocked(p, q)
	}
}

// bookPlan keeps PlanWaiting, the units admitted on a plan's room that
// still reserve room, in step with u: O(1).
func (a *State) bookPlan(u *Unit, waiting bool) {
	if u.planBooked == waiting {
		return
	}
	u.planBooked = waiting
	if waiting {
		a.PlanWaiting++
	} else {
		a.PlanWaiting--
	}
}

// setInflightLocked recomputes what an admitted unit still reserves.
func (a *State) setInflightLocked(u *Unit) {
	// Once a gang has had minMember members bound it has started, as Volcano
	// counts a running job: it reserves nothing more, so members finishing
	// one by one do not bring its reservation back.
	if u.Gang != nil && u.Admitted && u.Gang.Counts.Bound >= int(u.Min) && u.Min > 0 {
		u.Started = true
	}
	q := a.usageLocked(u.Queue)
	q.Inflight.Sub(u.Inflight)
	// Rewritten in place: this runs on every bind and unbind of a unit's
	// pods, and u.inflight is only read under the lock (Dump clones it).
	clear(u.Inflight)
	if u.Admitted && !u.Started && (u.Gang == nil || u.Gang.Counts.Active > 0 || awaitsMembers(u.Gang)) {
		for k, v := range u.Request {
			if d := v - u.Held[k]; d > 0 {
				if u.Inflight == nil {
					u.Inflight = resources.List{}
				}
				u.Inflight[k] = d
			}
		}
	}
	q.Inflight.Add(u.Inflight)
	a.bookPlan(u, u.OnPlan && len(u.Inflight) > 0)
	a.syncExtraDemandLocked(u)
	a.Feas.track(u, false)
	// A pending unit's request is net of what its bound members hold, which
	// this call follows: refresh the pending entry when that changed.
	if !u.Admitted {
		if g, ok := a.Pending.Get(u.Key); ok && !g.Request.Equal(pendingRequest(u)) {
			a.setPendingLocked(u)
		}
	}
	a.countLocked(u)
}

// setPendingLocked (re)places u among its queue's groups waiting for
// admission.
func (a *State) setPendingLocked(u *Unit) {
	a.Pending.Set(queue.Group{Key: u.Key, Queue: u.Queue, Priority: u.Priority, Created: u.created,
		Request: pendingRequest(u), Members: u.Members, MinMember: u.Min, FreeRoomUntil: u.freeRoomUntil})
}

// Hold adds a bound pod's request to what u holds. The first one is
// shared, not copied (see heldShared).
func (u *Unit) Hold(req resources.List) {
	switch {
	case len(u.Held) == 0:
		u.Held, u.heldShared = req, true
	case u.heldShared:
		u.Held, u.heldShared = u.Held.Clone(), false
		fallthrough
	default:
		u.Held = u.Held.Add(req)
	}
}

// Release subtracts a pod's request from what u holds.
func (u *Unit) Release(req resources.List) {
	if u.heldShared {
		if u.Held.Equal(req) {
			u.Held, u.heldShared = nil, false
			return
		}
		u.Held, u.heldShared = u.Held.Clone(), false
	}
	u.Held = u.Held.Sub(req)
}

// pendingRequest is what admission must still find room for: u's request
// less what its bound members already hold. Those are counted as used (and
// in their queue's allocated) already, so a gang that had members bound
// before it was admitted here (a scheduler killed while it bound the gang,
// before the admission was recorded on the PodGroup) would otherwise need
// their room twice and never be admitted.
func pendingRequest(u *Unit) resources.List {
	if len(u.Held) == 0 {
		return u.Request
	}
	out := make(resources.List, len(u.Request))
	for k, v := range u.Request {
		if d := v - u.Held[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
