package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// unit is one unit of admission: a gang (a queue.KindGroup key) or a singleton
// pod (a queue.KindPod key).
type unit struct {
	key   queue.Key
	gang  *gangbook.Group // nil for singletons
	pod   *v1.Pod         // the singleton's pod
	queue string
	// asked is the queue the unit's labels name when no Queue has that
	// name (queue is then MissingQueue), else "".
	asked    string
	priority int32
	created  time.Time
	request  resources.List
	members  int32
	min      int32
	admitted bool
	// annotated: the PodGroup carries the admitted-at annotation.
	annotated bool
	// started: the admitted gang had minMember members bound; it reserves
	// nothing from then on.
	started bool
	// held is what the unit's bound, unfinished pods request; inflight is
	// what it adds to its queue's inflight: request - held while admitted
	// (nil when nothing).
	held     resources.List
	inflight resources.List
	// heldShared: held is the one bound pod's request list, which pods
	// share (interned), so it must be copied before it is changed. A bound
	// singleton then holds no list of its own.
	heldShared bool
	// admittedMin and admittedMinRes are the gang's minMember and
	// minResources when it was admitted: a spec raised past them before the
	// gang starts asks for more than admission checked (raisedLocked).
	admittedMin    int32
	admittedMinRes resources.List
	// onPlan: admitted on room only a reclaim or preemption plan frees
	// (queue.Decision.OnPlan).
	onPlan bool
	// failedFit: a singleton admitted on free room that the scheduler
	// tried and found no node for since (ReleaseSingleton); the next pass
	// releases it if it fits no node of its free room either.
	failedFit bool
	// planBooked: counted in admissionState.planWaiting (onPlan and still
	// reserving room).
	planBooked bool
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
	// waitObserved: the unit's first admission is in admission_wait_seconds.
	waitObserved bool
	// extraDemand is the unit's part of extraQueue's extra demand
	// (extrademand.go); nil when none.
	extraDemand resources.List
	extraQueue  string
}

// gangUnitKey is the unit of PodGroup k. It shares k's strings: no allocation.
// unitNotice is the last verdict written for a unit. A pointer in unit,
// made at the first verdict: most units are never told anything (the bound
// singletons a restart finds, singletons admitted at once), and a restart
// builds one unit per bound singleton.
type unitNotice struct {
	// id is the last admission Event written ("" once it is to be written
	// again); stage and at say which check a refusal named (with its queue
	// and resource) and when it was written, to defer rewrites that change
	// only the numbers (verdictRefresh).
	id, stage string
	at        time.Time
	// msg is the refusal the unit was last told ("" after an admission):
	// what a Volcano PodGroup's status shows, so that it changes only as
	// often as the Event does.
	msg string
}

// told reports whether a verdict of u's stands written.
func (u *unit) told() bool { return u.notice != nil && u.notice.id != "" }

// retell makes u's next verdict be written, whatever it is.
func (u *unit) retell() {
	if u.notice != nil {
		u.notice.id = ""
	}
}

// refusal is the refusal u was last told, "" when none or after an
// admission.
func (u *unit) refusal() string {
	if u.notice == nil {
		return ""
	}
	return u.notice.msg
}

func gangUnitKey(k gangbook.GroupKey) queue.Key { return queue.GroupUnit(k.Namespace, k.Name) }

// podUnitKey is the singleton unit of pod p, sharing its strings.
func podUnitKey(p *v1.Pod) queue.Key { return queue.PodUnit(p.Namespace, p.Name) }

// queueSort is what QueueSort reads about a queue.
type queueSort struct {
	priority int32
	share    float64
}

// QueueSortInfo returns the queue priority and share QueueSort compares for
// pod, without allocating.
func (a *admissionState) queueSortLocked(queueName string) queueSort {
	if a == nil {
		return queueSort{}
	}
	return a.sorting[queueName]
}

// accountLocked is pod uid's admission account, nil without admission or
// without one.
func (a *admissionState) accountLocked(uid types.UID) *podAcct {
	if a == nil {
		return nil
	}
	return a.pods[uid]
}

// resolveQueueLocked names the queue of a group, folded (foldQueueLocked):
// the one its PodGroup names (groupspec.Spec.Queue, "" for none), else the
// pod's label, else the namespace's, else the default queue. asked is the
// name asked for when it was folded, else "".
func (a *admissionState) resolveQueueLocked(named string, pod *v1.Pod, ns string) (q, asked string) {
	return a.foldQueueLocked(a.askedQueueLocked(named, pod, ns))
}

// askedQueueLocked is the queue name a group asks for.
func (a *admissionState) askedQueueLocked(named string, pod *v1.Pod, ns string) string {
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
	return a.opts.DefaultQueue
}

// syncGangUnitLocked brings a gang's admission unit up to date after any
// change to the group; O(log n) in the number of pending groups. dirty is
// the cache's set of groups whose status is to be written (a gang whose
// spec was raised is released), synced whether the scheduler's pod
// informer has listed the members (short.go, overdue.go): both are the
// cache's, read under its lock.
func (a *admissionState) syncGangUnitLocked(g *gangbook.Group, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	if !a.on() {
		return
	}
	uk := gangUnitKey(g.Key)
	u := a.units[uk]
	if g.Obj == nil {
		if u != nil {
			a.dropUnitLocked(u)
		}
		return
	}
	fresh := u == nil
	if fresh {
		u = &unit{key: uk, gang: g}
		a.units[uk] = u
		// Bound pods accounted before the unit existed (its PodGroup was
		// recreated, or came after them) are held by it from now on; the
		// move below adds them to its queue.
		for _, p := range a.unitPods[uk] {
			if p.bound {
				if old := a.usage[p.queue]; old != nil && p.queue != "" {
					old.allocated.Sub(p.req)
				}
				u.hold(p.req)
			}
		}
	}
	var first *v1.Pod
	for _, m := range g.Members {
		first = m.Pod
		break
	}
	q, asked := a.resolveQueueLocked(g.Obj.Queue, first, g.Key.Namespace)
	u.asked = asked
	a.moveUnitLocked(u, q)
	u.priority, u.created = g.Priority, g.Created
	u.members, u.min = promisedMembers(g), g.Spec.MinMember
	annotated := g.Obj.Admitted
	if fresh && annotated {
		// Admitted by an earlier leader or process: never re-admit past capacity.
		u.admitted = true
		u.noteAdmittedSpec(g)
		a.pending.Delete(uk)
	}
	u.annotated = annotated
	// The request follows the members and minMember until the gang starts
	// (cached in the group, so this is O(1) unless they changed): a gang
	// admitted by an earlier process is installed from its annotation
	// before the scheduler's pod informer has delivered its members, and a
	// request frozen then would reserve nothing.
	u.request = g.MinRequestLocked()
	if u.admitted && !u.started && u.raised(g) {
		// Admission checked the smaller minimum only (capability, share,
		// placement); kept, the larger one would be reserved unchecked,
		// and a gang its nodes can never hold would keep its queue's room
		// from work that fits. Decided again, it is admitted at once if it
		// still fits. A gang that started keeps its admission, as when
		// it is released.
		a.unadmitLocked(g, dirty)
	}
	a.short.track(u, synced)
	a.overdue.track(g, u, synced)
	if !u.admitted {
		a.setPendingLocked(u)
		a.kickLocked()
	}
	a.setInflightLocked(u)
}

// noteAdmittedSpec records the spec the gang's admission was decided for.
func (u *unit) noteAdmittedSpec(g *gangbook.Group) {
	u.admittedMin, u.admittedMinRes = g.Spec.MinMember, g.Spec.MinResources
}

// raised reports whether g's spec asks for more than when u was admitted:
// a larger minMember, or minResources above the admitted ones in some
// resource. O(resources).
func (u *unit) raised(g *gangbook.Group) bool {
	if g.Spec.MinMember > u.admittedMin {
		return true
	}
	return u.admittedMinRes != nil && g.Spec.MinResources != nil && !g.Spec.MinResources.FitsIn(u.admittedMinRes)
}

// unadmitLocked returns a released gang to its queue's pending groups: an
// admitted gang that could not be placed must not keep its queue's room
// reserved while others wait, or two admitted gangs could block each other.
// dirty is the cache's set of groups whose status is to be written.
func (a *admissionState) unadmitLocked(g *gangbook.Group, dirty map[gangbook.GroupKey]struct{}) {
	if !a.on() {
		return
	}
	u := a.units[gangUnitKey(g.Key)]
	// A gang that started (had minMember bound) keeps its admission when it
	// is released, as a running Volcano job stays Inqueue: its replacement
	// members are scheduled next to the running ones. Sent back to pending,
	// its request would count its running members' resources a second
	// time, on top of the cluster's used amount, and could never fit again.
	if u == nil || !u.admitted || u.started {
		return
	}
	u.admitted, u.started = false, false
	u.retell() // the next admission writes its Event and annotation again
	dirty[g.Key] = struct{}{}
	a.setInflightLocked(u)
	u.request = g.MinRequestLocked()
	a.setPendingLocked(u)
	a.writes.release(u.key, g.Key.Named(), g.Obj.Source)
	a.kickLocked()
}

// dropUnitLocked forgets a unit: its group or pod is gone.
func (a *admissionState) dropUnitLocked(u *unit) {
	a.pending.Delete(u.key)
	a.writes.forgetUnit(u.key)
	if q := a.usage[u.queue]; q != nil {
		q.inflight.Sub(u.inflight)
	}
	a.bookPlan(u, false)
	delete(a.units, u.key)
	a.dropExtraDemandLocked(u)
	a.feas.track(u, true)
	if len(a.unitPods[u.key]) == 0 {
		delete(a.unitPods, u.key)
	}
	a.kickLocked()
}

// moveUnitLocked sets the unit's queue, moving what it holds and reserves.
func (a *admissionState) moveUnitLocked(u *unit, q string) {
	if u.queue == q {
		return
	}
	if old := a.usage[u.queue]; old != nil && u.queue != "" {
		old.allocated.Sub(u.held)
		old.inflight.Sub(u.inflight)
	}
	u.queue = q
	nu := a.usageLocked(q)
	nu.allocated.Add(u.held)
	nu.inflight.Add(u.inflight)
	// Re-tag the pods accounted to the unit, so that their later events
	// subtract from the right queue: O(unit size), never a scan of all pods.
	for _, p := range a.unitPods[u.key] {
		a.retagLocked(p, q)
	}
}

// bookPlan keeps planWaiting, the units admitted on a plan's room that
// still reserve room, in step with u: O(1).
func (a *admissionState) bookPlan(u *unit, waiting bool) {
	if u.planBooked == waiting {
		return
	}
	u.planBooked = waiting
	if waiting {
		a.planWaiting++
	} else {
		a.planWaiting--
	}
}

// setInflightLocked recomputes what an admitted unit still reserves.
func (a *admissionState) setInflightLocked(u *unit) {
	// Once a gang has had minMember members bound it has started, as Volcano
	// counts a running job: it reserves nothing more, so members finishing
	// one by one do not bring its reservation back.
	if u.gang != nil && u.admitted && u.gang.Counts.Bound >= int(u.min) && u.min > 0 {
		u.started = true
	}
	// A started gang whose every member is gone (all evicted or deleted,
	// none finished) runs nothing: it is admitted but not started again,
	// so it reserves its minimum until it binds and a release sends it back
	// to pending, where its queue's capability and share are checked anew.
	// Kept started, it would hold its admission for good, retrying one
	// member at a time over whatever its queue has since given others.
	if u.started && u.gang != nil && u.gang.Counts.Bound == 0 {
		u.started = false
		// Not started again, it may be short of members (its minMember
		// raised while it ran, or members deleted with the bound ones):
		// then it can never bind its minimum, and the short tracker must
		// send it back to pending, as before it started. It had members
		// bound, so the pod informer has listed them.
		a.short.track(u, true)
	}
	q := a.usageLocked(u.queue)
	q.inflight.Sub(u.inflight)
	// Rewritten in place: this runs on every bind and unbind of a unit's
	// pods, and u.inflight is only read under the lock (Dump clones it).
	clear(u.inflight)
	if u.admitted && !u.started && (u.gang == nil || u.gang.Counts.Active > 0 || awaitsMembers(u.gang)) {
		for k, v := range u.request {
			if d := v - u.held[k]; d > 0 {
				if u.inflight == nil {
					u.inflight = resources.List{}
				}
				u.inflight[k] = d
			}
		}
	}
	q.inflight.Add(u.inflight)
	a.bookPlan(u, u.onPlan && len(u.inflight) > 0)
	a.syncExtraDemandLocked(u)
	a.feas.track(u, false)
	// A pending unit's request is net of what its bound members hold, which
	// this call follows: refresh the pending entry when that changed.
	if !u.admitted {
		if g, ok := a.pending.Get(u.key); ok && !g.Request.Equal(pendingRequest(u)) {
			a.setPendingLocked(u)
		}
	}
}

// setPendingLocked (re)places u among its queue's groups waiting for
// admission.
func (a *admissionState) setPendingLocked(u *unit) {
	a.pending.Set(queue.Group{Key: u.key, Queue: u.queue, Priority: u.priority, Created: u.created,
		Request: pendingRequest(u), Members: u.members, MinMember: u.min, FreeRoomUntil: u.freeRoomUntil})
}

// hold adds a bound pod's request to what u holds. The first one is
// shared, not copied (see heldShared).
func (u *unit) hold(req resources.List) {
	switch {
	case len(u.held) == 0:
		u.held, u.heldShared = req, true
	case u.heldShared:
		u.held, u.heldShared = u.held.Clone(), false
		fallthrough
	default:
		u.held = u.held.Add(req)
	}
}

// release subtracts a pod's request from what u holds.
func (u *unit) release(req resources.List) {
	if u.heldShared {
		if u.held.Equal(req) {
			u.held, u.heldShared = nil, false
			return
		}
		u.held, u.heldShared = u.held.Clone(), false
	}
	u.held = u.held.Sub(req)
}

// pendingRequest is what admission must still find room for: u's request
// less what its bound members already hold. Those are counted as used (and
// in their queue's allocated) already, so a gang that had members bound
// before it was admitted here (a scheduler killed while it bound the gang,
// before the admission was recorded on the PodGroup) would otherwise need
// their room twice and never be admitted.
func pendingRequest(u *unit) resources.List {
	if len(u.held) == 0 {
		return u.request
	}
	out := make(resources.List, len(u.request))
	for k, v := range u.request {
		if d := v - u.held[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
