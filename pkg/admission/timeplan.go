package admission

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/plan"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// MaxReservations bounds a pass's reservations in all, whatever the number
// of queues: each costs a search over the release timeline, and the ones
// far down would be planned again before they start anyway.
const MaxReservations = 64

// podEnd is a bound pod with a run-time limit: where it holds what, and
// when it gives it back at the latest (Unix seconds).
type podEnd struct {
	Node  string
	req   resources.List
	start time.Time
	end   int64
}

// trackEndLocked keeps a.ends in step with pod, accounted as acct (nil when
// it is gone or finished): only bound pods with a limit are kept, so a
// cluster of pods without limits pays one map lookup per event. group are
// the annotations of the pod's PodGroup (nil without one). The start
// is the pod's status.startTime, else when it was first seen bound. O(1).
func (a *State) trackEndLocked(pod *v1.Pod, acct *PodAcct, group map[string]string) {
	old, had := a.Ends[pod.UID]
	if acct == nil || !acct.Bound {
		if had {
			delete(a.Ends, pod.UID)
			a.Feas.Releases.dirty(pod.UID)
			a.Feas.forgetRelease(old)
		}
		return
	}
	lim, _ := a.LimitOfPod(pod, group) // an invalid annotation is ignored, as if absent (told by podNotices.noteRunLimit)
	if !lim.Bounded() {
		if had {
			delete(a.Ends, pod.UID)
			a.Feas.Releases.dirty(pod.UID)
			a.Feas.forgetRelease(old)
		}
		return
	}
	var start time.Time
	switch {
	case pod.Status.StartTime != nil:
		start = pod.Status.StartTime.Time
	case had:
		start = old.start
	default:
		start = time.Now()
	}
	if a.Ends == nil {
		a.Ends = map[types.UID]podEnd{}
	}
	e := podEnd{Node: acct.Node, req: acct.Req, start: start, end: runlimit.EndOf(start, lim)}
	if !had || old.Node != e.Node || old.end != e.end || !old.req.Equal(e.req) {
		a.Feas.Releases.dirty(pod.UID)
		if had {
			a.Feas.forgetRelease(old)
		}
	}
	a.Ends[pod.UID] = e
}

// forgetRelease takes e, a bound pod's end as the last pass planned with
// it, out of what the kept reservations count as released by their starts
// on its node: the pod ended early (its room is free now, where the Filter
// and the next pass see it) or its end or room changed. Left in, that room
// would count twice until the next pass plans again, and a pod outlasting
// a reservation could take room it needs. What now ends by a start is not
// added: the next pass counts it. O(reservations).
func (f *FeasibleState) forgetRelease(e podEnd) {
	for i := range f.Timed {
		t := &f.Timed[i]
		if e.end > t.Start {
			continue
		}
		if k := slices.Index(t.Nodes, e.Node); k >= 0 && k < len(t.Released) {
			t.Released[k] = t.Released[k].Less(e.req)
		}
	}
}

// Timed is one reservation as kept between passes and shown to users.
type Timed struct {
	Key        queue.Key
	Start, end int64 // Unix seconds; end is plan.Unbounded without a limit
	Nodes      []string
	Guaranteed bool
	// need is what its members take on each of nodes (same order), and
	// released what the pods running there when it was planned give back
	// by its start.
	Need, Released []resources.List
	// steps is where each member goes, for the next pass to plan the same
	// placement again while it still fits at start (plan.Gang.Keep).
	steps []keptStep
}

// keptStep is one member of a reservation's placement: its class and node.
type keptStep struct {
	class int32
	node  string
}

// timePlan is a pass's plan over time. It is built on the pass's first
// Hold, or on its first Check when the last pass kept reservations, from
// the working room at that moment and the ends of bound pods; room taken
// earlier in the pass has no end it knows, so it counts as never coming
// back (later starts, never earlier ones).
type timePlan struct {
	now   int64
	built bool
	p     *plan.Plan
	held  []Timed
	// renewed says which of held a Hold of this pass asked for; the others
	// were carried from the last pass and end with it.
	renewed map[queue.Key]bool

	// inflight is the room admitted, unplaced units take in the working
	// room (placeInflight); temp are the releases buildPlan added for
	// those with a limit, taken out of the long-lived timeline again by
	// finishTime.
	inflight []inflightRoom
	temp     []plan.Alloc
	// since is when each admitted, unplaced unit was admitted (or first
	// found unplaced), with the pass that last saw it so: addInflight
	// counts its limit from there. Counted from each pass's now, a unit
	// the scheduler does not place at once (the Filter keeps it off room
	// a reservation needs) ended later at every pass, and the reservation
	// behind it slid with the clock.
	since map[queue.Key]sinceMark
	// probed: limitedInflight says whether an admitted, unplaced unit
	// has a limit (mayPlan).
	probed, limitedInflight bool

	// What the last plain Check found for the plan (Commit, Delayed).
	jobKey   queue.Key
	job      plan.Job
	jobSteps []placement.Step
	delayed  bool
	delayBy  Timed
	// vetoed is the group the last plain Check found room for now and
	// refused for delaying a reservation: no plan's room helps it.
	vetoed queue.Key
	// Unheld are the heads Hold found no reservation for, in order: they
	// get an estimated start (estimate.go).
	Unheld []queue.Key
}

// resetTime readies the time plan for a pass at now.
func (pp *passPlacement) resetTime(now time.Time) {
	tp := &pp.Tp
	tp.now, tp.built = now.Unix(), false
	tp.inflight, tp.temp = tp.inflight[:0], tp.temp[:0]
	tp.probed, tp.limitedInflight = false, false
	tp.held, tp.Unheld = tp.held[:0], tp.Unheld[:0]
	clear(tp.renewed)
	tp.jobKey, tp.delayed, tp.vetoed = queue.Key{}, false, queue.Key{}
}

// buildPlan brings the release timeline up to date with the working room
// and plans again, first, the reservations the last pass kept. O(changed
// pods with a limit x log E + nodes x resources), plus the reservations.
func (pp *passPlacement) buildPlan() {
	tp := &pp.Tp
	tp.built = true
	tl := pp.feas.Releases.timeline(pp, pp.adm.Ends)
	r := pp.Free.R
	for i := range len(pp.Names) {
		row := pp.Free.Free[i*r : (i+1)*r]
		if pp.Free.Blocked != nil && pp.Free.Blocked[i] {
			row = nil // a starving head's node: no one else's
		}
		tl.SetFree(i, row)
	}
	pp.addInflight(tl)
	if tp.p == nil {
		tp.p = plan.New(tl, tp.now, MaxReservations)
	} else {
		tp.p.Reset(tl, tp.now, MaxReservations)
	}
	for _, t := range pp.feas.Timed {
		if u := pp.adm.Units[t.Key]; u != nil && !u.Admitted {
			pp.reserve(t.Key)
		}
	}
	pp.classKey = queue.Key{} // reserve used the class scratch
}

// mayPlan says whether a reservation can exist in this pass: some room
// must come back at a known time, from a bound pod or an admitted unit
// with a limit. Without one no group that fails to fit now ever fits, and
// a cluster whose jobs declare no limits pays nothing for planning.
func (pp *passPlacement) mayPlan() bool {
	tp := &pp.Tp
	if tp.built || len(pp.adm.Ends) > 0 {
		return true
	}
	if !tp.probed {
		tp.probed = true
		for _, f := range tp.inflight {
			if pp.limitOf(f.key) > 0 {
				tp.limitedInflight = true
				break
			}
		}
	}
	return tp.limitedInflight
}

// Hold implements queue.Planner.
func (pp *passPlacement) Hold(g queue.Group) bool {
	tp := &pp.Tp
	if !pp.mayPlan() {
		pp.noteUnheld(g.Key)
		return false
	}
	if !tp.built {
		pp.buildPlan()
	}
	if tp.renewed == nil {
		tp.renewed = map[queue.Key]bool{}
	}
	tp.renewed[g.Key] = true
	isG := func(t Timed) bool { return t.Key == g.Key }
	if !slices.ContainsFunc(tp.held, isG) {
		pp.reserve(g.Key)
	}
	if !slices.ContainsFunc(tp.held, isG) {
		pp.noteUnheld(g.Key)
		return false
	}
	return true
}

// noteUnheld notes a head Hold found no reservation for.
func (pp *passPlacement) noteUnheld(key queue.Key) {
	if !slices.Contains(pp.Tp.Unheld, key) {
		pp.Tp.Unheld = append(pp.Tp.Unheld, key)
	}
}

// reserveOn plans key's reservation on p; false when key has nothing to
// place or never fits.
func (pp *passPlacement) reserveOn(p *plan.Plan, key queue.Key) (plan.Reservation, bool) {
	classes, want := pp.unitClasses(key)
	if want == 0 {
		classes, want = pp.plannedClasses(key)
	}
	if want == 0 {
		return plan.Reservation{}, false
	}
	g := plan.Gang{Key: key.String(), Classes: classes, Limit: pp.limitOf(key)}
	if t, ok := pp.feas.ReservationOf(key); ok {
		g.Keep, g.KeepAt = pp.keptPlacement(t), t.Start
	}
	res, err := p.Reserve(g)
	return res, err == nil
}

// keptPlacement is t's placement by this pass's node indexes; nil when a
// node of it is gone.
func (pp *passPlacement) keptPlacement(t Timed) []placement.Step {
	out := make([]placement.Step, 0, len(t.steps))
	for _, s := range t.steps {
		i, ok := pp.Index[s.node]
		if !ok {
			return nil
		}
		out = append(out, placement.Step{Class: s.class, Node: int32(i)})
	}
	return out
}

// reserve plans key's reservation and records it.
func (pp *passPlacement) reserve(key queue.Key) {
	res, ok := pp.reserveOn(pp.Tp.p, key)
	if !ok {
		return
	}
	classes := pp.classes // reserveOn's, for key
	t := Timed{Key: key, Start: res.Start, end: res.End, Guaranteed: res.Guaranteed, steps: make([]keptStep, len(res.Steps))}
	for k, s := range res.Steps {
		n := pp.Names[s.Node]
		t.steps[k] = keptStep{s.Class, n}
		i := slices.Index(t.Nodes, n)
		if i < 0 {
			i = len(t.Nodes)
			t.Nodes, t.Need = append(t.Nodes, n), append(t.Need, resources.List{})
		}
		for j, v := range classes[s.Class].Request {
			if v != 0 {
				t.Need[i][pp.Resources[j]] += v
			}
		}
	}
	pp.Tp.held = append(pp.Tp.held, t)
}

// limitOf is key's run-time limit in seconds for the plan, 0 without one:
// a singleton's pod's, or the longest of a gang's unfinished members'
// (unbounded when one has none), or, for a gang none of whose members exist
// yet (Volcano's), its PodGroup's. Members read their PodGroup's
// annotation too. It is one second longer than the limit: what the plan
// starts at second t binds after the pass, within t at the earliest, and
// the kubelet counts the limit from that start rounded up (runlimit.EndOf);
// a job let in to end by a reservation's start must end by it once bound.
// O(members).
func (pp *passPlacement) limitOf(key queue.Key) int64 {
	u := pp.adm.Units[key]
	if u == nil {
		return 0
	}
	a := pp.adm
	var l runlimit.Limit
	if u.Gang == nil {
		l, _ = a.LimitOfPod(u.Pod, nil)
	} else if len(u.Gang.Members) == 0 {
		l, _ = runlimit.Of(nil, GroupAnnotations(u.Gang))
	} else {
		lims := make([]runlimit.Limit, 0, len(u.Gang.Members))
		for _, m := range u.Gang.Members {
			if m.Pod != nil && !m.State.Phase.Terminal() {
				ml, _ := a.LimitOfPod(m.Pod, GroupAnnotations(u.Gang))
				lims = append(lims, ml)
			}
		}
		l = runlimit.Gang(lims)
	}
	if !l.Bounded() {
		return 0
	}
	return l.Hold() + 1
}

// backfills reports whether g, whose classes fit the working room now,
// may start now without delaying a reservation of the pass; when not, it
// records the earliest reservation it would delay (Delayed). A group whose
// own reservation starts now starts on it. One reserved for later is a
// backfill like any other: the reservations planned after its own were
// placed around its later start, and taking room now, before they were
// placed, can push the ones before it back.
func (pp *passPlacement) backfills(g queue.Group, classes []placement.Class) bool {
	tp := &pp.Tp
	tp.jobKey, tp.delayed = g.Key, false
	if !tp.built || len(tp.held) == 0 || pp.startsOnReservation(g.Key) {
		tp.jobKey = queue.Key{}
		return true
	}
	tp.job = plan.Job{Classes: classes, Limit: pp.limitOf(g.Key)}
	steps, ok := tp.p.CanBackfill(tp.job)
	if ok {
		tp.job.Classes = slices.Clone(classes) // the pass's scratch changes before Commit
		tp.jobSteps = append(tp.jobSteps[:0], steps...)
		return true
	}
	tp.jobKey, tp.delayed, tp.delayBy = queue.Key{}, true, Timed{}
	end := plan.Unbounded
	if tp.job.Limit > 0 {
		end = tp.now + tp.job.Limit
	}
	for _, t := range tp.held {
		if t.Key != g.Key && t.Start < end && (tp.delayBy.Key.IsZero() || t.Start < tp.delayBy.Start) {
			tp.delayBy = t
		}
	}
	if tp.delayBy.Key.IsZero() {
		// No other reservation starts before it ends: the plan refused it
		// for its own later reservation's room, or for room it does not
		// model (a starving group's own reserved nodes, which the plan
		// keeps from everyone), which the placement check has already
		// allowed.
		tp.delayed = false
		return true
	}
	tp.vetoed = g.Key
	return false
}

// startsOnReservation reports whether key holds a reservation of this pass
// that starts now.
func (pp *passPlacement) startsOnReservation(key queue.Key) bool {
	tp := &pp.Tp
	i := slices.IndexFunc(tp.held, func(t Timed) bool { return t.Key == key })
	return i >= 0 && tp.held[i].Start <= tp.now
}

// commitJob takes, in the plan, the room of g's last backfill check.
func (pp *passPlacement) commitJob(g queue.Group) {
	tp := &pp.Tp
	if tp.jobKey != g.Key {
		return
	}
	tp.p.Commit(tp.job, tp.jobSteps)
	tp.jobKey = queue.Key{}
}

// The pass finds the plan through a type assertion (queue.Planner is
// optional for a Placement), so nothing but this line would notice a
// method of it renamed away.
var _ queue.Planner = (*passPlacement)(nil)

// Delayed implements queue.Planner.
func (pp *passPlacement) Delayed(g queue.Group) (queue.Key, time.Time, bool) {
	tp := &pp.Tp
	if !tp.delayed || pp.lastKey != g.Key {
		return queue.Key{}, time.Time{}, false
	}
	return tp.delayBy.Key, time.Unix(tp.delayBy.Start, 0), true
}

// finishTime keeps the reservations this pass asked for, of groups still
// waiting, for the next pass and for users.
func (pp *passPlacement) finishTime() {
	f := pp.feas
	for _, a := range pp.Tp.temp {
		f.Releases.tl.Remove(a)
	}
	pp.Tp.temp = pp.Tp.temp[:0]
	pp.forgetPlaced()
	before := make(map[queue.Key]int64, len(f.Timed))
	for _, t := range f.Timed {
		before[t.Key] = t.Start
	}
	f.Timed = f.Timed[:0]
	clear(f.TimedBy)
	for _, t := range pp.Tp.held {
		if u := pp.adm.Units[t.Key]; u != nil && !u.Admitted && pp.Tp.renewed[t.Key] {
			if f.TimedBy == nil {
				f.TimedBy = map[queue.Key]int{}
			}
			f.TimedBy[t.Key] = len(f.Timed)
			f.Timed = append(f.Timed, t)
		}
	}
	f.AnyTimed.Store(len(f.Timed) > 0)
	pp.releasedByStarts()
	pp.estimateStarts()
	// Room a reservation no longer holds (it ended, or starts later) is
	// no cluster event: the pods the Filter kept out of it would wait
	// for the next pod deletion or the scheduler's periodic flush.
	pp.roomReturned = false
	for key, start := range before {
		if t, ok := f.ReservationOf(key); !ok || t.Start > start {
			pp.roomReturned = true
			break
		}
	}
}

// retryHeldOut adds to act the waiting pods of admitted units when the
// pass gave reserved room back: the CalderaReservation Filter may have
// kept them out of it. O(admitted units still placing).
func (pp *passPlacement) retryHeldOut(act map[string]*v1.Pod) {
	if !pp.roomReturned {
		return
	}
	for _, u := range pp.feas.inflight {
		pp.adm.unitPendingPodsLocked(u, act)
	}
}

// releasedByStarts fills each kept reservation's released amounts: what
// bound pods on its nodes give back by its start. One scan of the pods
// with a limit, in passes that keep a reservation only.
func (pp *passPlacement) releasedByStarts() {
	f := pp.feas
	if len(f.Timed) == 0 {
		return
	}
	type at struct{ t, n int }
	where := map[string][]at{}
	for ti := range f.Timed {
		t := &f.Timed[ti]
		t.Released = make([]resources.List, len(t.Nodes))
		for ni, n := range t.Nodes {
			t.Released[ni] = resources.List{}
			where[n] = append(where[n], at{ti, ni})
		}
	}
	for _, e := range pp.adm.Ends {
		for _, w := range where[e.Node] {
			if t := &f.Timed[w.t]; e.end <= t.Start {
				t.Released[w.n].Add(e.req)
			}
		}
	}
}

// ReservationOf returns the reservation the last pass kept for unit key.
// O(1).
func (f *FeasibleState) ReservationOf(key queue.Key) (Timed, bool) {
	i, ok := f.TimedBy[key]
	if !ok {
		return Timed{}, false
	}
	return f.Timed[i], true
}

// String says when and where the reservation starts, as verdicts show it.
func (t Timed) String() string {
	return fmt.Sprintf("reserved from %s on %s", time.Unix(t.Start, 0).UTC().Format(time.RFC3339), strings.Join(t.Nodes, ", "))
}

// GroupAnnotations are g's PodGroup's annotations, nil without one.
func GroupAnnotations(g *gangbook.Group) map[string]string {
	if g == nil || g.Obj == nil {
		return nil
	}
	return g.Obj.Annotations
}
