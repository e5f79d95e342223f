package random_test

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reservations: what the scheduler promises when it plans over time
// (docs/backfill.md). A pass plans the reservations it kept first, then
// admits work that fits now only where it does not delay them (backfill),
// and the next pass plans them again over the new state. So an admission
// never delays a reservation: a fresh plan finds it again no later than
// before (pkg/plan, FuzzBackfillNeverDelaysReservation). The harness sees a
// reservation as its gang's PodGroup annotation expected-start, and the
// nodes in its verdict ("...; reserved from T on a, b"); a singleton has
// no object to carry one.
//
// reservation-kept: between two observations of a gang's PodGroup (one
// check apart), its expected start must not move later (to a time more
// than dueSlack after now: a start that is due and slides with now is no
// delay), nor may the annotation go while the gang is neither admitted
// (admitted-at) nor started, unless in the window [last seen - causeLag,
// now] something other than the admission and binding of other work
// happened that may rightly do it:
//
//   - a scheduler restart, if the reservation was last seen before the new
//     process had been ready for restartSettle (it counts running pods from
//     when it first sees them, so their ends, and its plans, are later;
//     its reservations are planned in a new order);
//   - a node relabel (where members may go changed);
//   - a bounded pod holding its room past its limit (the plan expects it
//     back at any moment, pass after pass);
//   - an action on the gang itself (minMember change, deletion of a
//     member, ungate, deletion);
//   - new demand ahead of it in its queue: a group of higher priority
//     submitted, ungated or given a new minMember, one of the same
//     priority ungated or given a new minMember, or one submitted in the
//     same second (ties of priority go by creation time in whole seconds,
//     then by name). The first group refused for room holds the queue's
//     reservation;
//   - an eviction, when a pod was bound onto one of its nodes after it (the
//     preemptor binds once its victims are gone) or another reservation
//     may exist: admission on a reclaim or preemption plan is not held to
//     reservations (docs/backfill.md, "Not yet");
//   - room coming back (a completion or deletion), or an action on another
//     gang holding a reservation, while another reservation may exist
//     (another gang's annotation, shown up to causeLag late, or a pending
//     singleton that fits no node now but would once the pods with a limit
//     there end): kept reservations are planned in turn, and an earlier one
//     that can start sooner, or needs more, may take the nodes the next
//     must then avoid. A reservation planned alone only gets earlier when
//     room comes back;
//   - when the annotation went: any generator action and any room coming
//     back, since either may move the deserved shares or make another group
//     its queue's first refused for room.
//
// A change is judged causeLag after it was seen, when the annotations of
// reservations that existed in its window have had time to show.
//
// reservation-start (the cheap sanity check): a reserved gang starts (binds
// minMember) within startSlack of the earliest expected start it was told
// since its reservation last moved later (a move later is
// reservation-kept's to judge), unless something above happened since.
//
// Every start is a whole second on the scheduler's clock, the harness's too
// (one machine).

const (
	// causeLag covers the way from an event to the annotation the harness
	// reads: the scheduler's informer, the admission pass (every
	// admissionPeriodSeconds, 2 s, or sooner on events), the status
	// writer's period (1 s) and the harness's list.
	causeLag = 5 * time.Second
	// restartSettle is how long after a restart's ready the new process may
	// still be rewriting the annotations the old one left.
	restartSettle = 10 * time.Second
	// watchSkew: the harness sees a victim's deletion and its preemptor's
	// bindings on two watches, whose events may arrive in either order
	// (seed 9007: bindings seen 57 ms before the deletion they followed).
	watchSkew = time.Second
	// dueSlack: a start at most this far after now is due already.
	dueSlack = 2 * time.Second
	// startSlack: a pass after the start admits the gang (passes come every
	// 2 s), the status writer lets its pods go, kube-scheduler binds them,
	// possibly after a gang backoff of up to podGroupMaxBackoffSeconds
	// (10 s).
	startSlack = 15 * time.Second
)

// happening is something the harness did or saw that may excuse a
// reservation's change.
type happening struct {
	at    time.Time
	kind  string // an actionKind, or hFreed / hEvicted
	group string // the generator's group, "" for none
	node  string // a binding's
	queue string
	prio  int32
	what  string
}

const (
	hFreed   = "freed"   // a bound pod stopped holding room: finished or deleted
	hEvicted = "evicted" // a deletion the generator did not make
)

// happened records h.
func (r *run) happened(h happening) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.happenings = append(r.happenings, h)
}

// resvTrack is what the watch knows of one PodGroup's reservation.
type resvTrack struct {
	uid  string
	pg   string
	spec groupSpec
	eta  time.Time // the expected start last seen; zero while it has none
	seen time.Time // when eta was last seen
	// nodes are the nodes the reservation named when last seen (its
	// verdict's "reserved from T on a, b").
	nodes []string
	// since is when the present annotation was first seen.
	since time.Time
	// promise is the start reservation-start holds the gang to (zero for
	// none), made at promised.
	promise, promised time.Time
}

// span is a time a reservation (or a possible one) was visible.
type span struct {
	uid, group string
	from, to   time.Time
}

// suspect is a change of a reservation waiting to be judged: causeLag
// after its window, when the annotations of reservations that existed in it
// have had time to show.
type suspect struct {
	inv      string // the invariant
	t        resvTrack
	from, to time.Time
	dropped  bool   // judge with the exceptions of an ended reservation
	what     string // the change, for the trace and the violation
	detail   string // the gang's state when the change was seen
}

// checkReservations runs the reservation checks on s. Called with w.mu
// held.
func (w *watcher) checkReservations(s *snapshot, now time.Time) {
	r, tr := w.r, w.r.trace
	seen := map[string]bool{}
	for _, pg := range s.PGs {
		seen[pg.UID] = true
		t := w.resv[pg.UID]
		if t == nil {
			spec, ok := r.specOfPodGroup(pg.Name)
			if !ok || pg.ETA.IsZero() {
				continue
			}
			t = &resvTrack{uid: pg.UID, pg: pg.Name, spec: spec}
			w.resv[pg.UID] = t
		}
		g := s.Groups[pg.Name]
		if g != nil && w.gangs[g.UID] != nil && w.gangs[g.UID].started {
			if !t.eta.IsZero() || !t.promise.IsZero() {
				tr.logf("  %s started, reserved from %s", pg.Name, clock(maxTime(t.eta, t.promise)))
			}
			w.endSpan(t, now)
			delete(w.resv, pg.UID)
			continue
		}
		from := t.seen.Add(-causeLag)
		switch {
		case !pg.ETA.IsZero() && !t.eta.IsZero() && pg.ETA.After(t.eta):
			if !pg.ETA.After(now.Add(dueSlack)) {
				break // due now, and sliding with now: not a delay
			}
			w.suspect(suspect{inv: "reservation-kept", t: *t, from: from, to: now, detail: pgLine(pg, g),
				what: fmt.Sprintf("the reservation of %s on %s moved later, from %s to %s (on %s)",
					pg.Name, strings.Join(t.nodes, ","), clock(t.eta), clock(pg.ETA), strings.Join(reservedNodes(pg.Verdict), ","))})
			// The start it is held to moves too: whether the move was
			// right is reservation-kept's to judge.
			t.promise, t.promised = pg.ETA, now
		case pg.ETA.IsZero() && !t.eta.IsZero():
			w.endSpan(t, now)
			if pg.Admitted {
				tr.logf("  %s admitted, reserved from %s", pg.Name, clock(t.eta))
				break
			}
			w.suspect(suspect{inv: "reservation-kept", t: *t, from: from, to: now, dropped: true, detail: pgLine(pg, g),
				what: fmt.Sprintf("the reservation of %s from %s on %s ended, the gang neither admitted nor started", pg.Name, clock(t.eta), strings.Join(t.nodes, ","))})
			t.promise = time.Time{}
		}
		if !pg.ETA.IsZero() {
			if t.eta.IsZero() {
				t.since = now
				tr.logf("  %s reserved from %s on %s", pg.Name, clock(pg.ETA), strings.Join(reservedNodes(pg.Verdict), ","))
			}
			if t.promise.IsZero() || pg.ETA.Before(t.promise) {
				t.promise, t.promised = pg.ETA, now
			}
			t.eta, t.seen = pg.ETA, now
			t.nodes = reservedNodes(pg.Verdict)
		} else {
			t.eta = time.Time{}
		}
		if !t.promise.IsZero() && now.After(t.promise.Add(startSlack)) {
			w.suspect(suspect{inv: "reservation-start", t: *t, from: t.promised.Add(-causeLag), to: now, dropped: !pg.Admitted && t.eta.IsZero(), detail: pgLine(pg, g),
				what: fmt.Sprintf("%s, reserved from %s (told at %v), has not started %v after it", pg.Name, clock(t.promise), r.trace.at(t.promised), startSlack)})
			t.promise = time.Time{}
		}
	}
	for uid, t := range w.resv {
		if !seen[uid] {
			w.endSpan(t, now) // deleted
			delete(w.resv, uid)
		}
	}
	w.judge(now, false)
}

func (w *watcher) suspect(s suspect) { w.suspects = append(w.suspects, s) }

// judge decides the suspects whose time has come (all when final). Called
// with w.mu held.
func (w *watcher) judge(now time.Time, final bool) {
	r, tr := w.r, w.r.trace
	keep := w.suspects[:0]
	for _, s := range w.suspects {
		if !final && now.Before(s.to.Add(causeLag)) {
			keep = append(keep, s)
			continue
		}
		why := w.excuse(&s.t, s.from, s.to, s.dropped)
		if why == "" {
			tr.fail(s.inv, s.t.uid+"/"+s.what, "%s, with only admissions of other work in the %v before (%s); %s",
				s.what, s.to.Sub(s.from).Round(time.Millisecond), r.windowLine(s.from, s.to), s.detail)
			continue
		}
		tr.logf("  [%v] %s: %s", r.trace.at(s.to), s.what, why)
	}
	w.suspects = keep
}

// finishReservations judges what is left at the end of the run.
func (w *watcher) finishReservations() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.judge(time.Now(), true)
}

func (w *watcher) endSpan(t *resvTrack, now time.Time) {
	if !t.eta.IsZero() {
		w.spans = append(w.spans, span{uid: t.uid, group: t.spec.Name, from: t.since, to: now})
	}
}

// excuse says what in [from, to] may have moved t's reservation later
// (dropped: ended it), "" if nothing did. Called with w.mu held.
func (w *watcher) excuse(t *resvTrack, from, to time.Time, dropped bool) string {
	r := w.r
	if at, ok := r.restartNear(from, to); ok {
		return fmt.Sprintf("a scheduler restart (killed at %v)", r.trace.at(at))
	}
	if name := r.runner.overrunWithin(from, to); name != "" {
		return fmt.Sprintf("%s overran its limit", name)
	}
	r.mu.Lock()
	hs := r.happenings
	r.mu.Unlock()
	submitted := r.lastSubmit(t.spec.Name, to)
	// Another reservation may have been planned before t's: then what
	// changes its room or its needs may move it onto t's nodes.
	other := w.otherReservation(t, from, to)
	for i := len(hs) - 1; i >= 0; i-- {
		h := hs[i]
		if h.at.Before(from) || h.at.After(to) {
			continue
		}
		what := fmt.Sprintf("%s at %v", h.what, r.trace.at(h.at))
		switch {
		case h.kind == string(actRelabel):
			return what
		case h.group == t.spec.Name:
			return "its own " + what
		case isDemand(h.kind) && h.queue == t.spec.Queue && r.ahead(h, t.spec, submitted):
			return fmt.Sprintf("%s, ahead of it in its queue (priority %d)", what, h.prio)
		case dropped:
			return what
		case h.kind == hEvicted && other != "":
			// Admission on a reclaim or preemption plan is not held to
			// reservations.
			return fmt.Sprintf("%s (reclaim and preemption are not held to reservations), while %s", what, other)
		case h.kind == hEvicted && r.boundOnto(t.nodes, h.at.Add(-watchSkew), to) != "":
			// The preemptor binds after its victims are gone.
			return fmt.Sprintf("%s (reclaim and preemption are not held to reservations), then %s", what, r.boundOnto(t.nodes, h.at.Add(-watchSkew), to))
		case h.kind == hFreed && other != "":
			return fmt.Sprintf("%s, while %s", what, other)
		case other != "" && h.group != "" && w.heldReservation(h.group, from.Add(-causeLag), to):
			return fmt.Sprintf("%s, which holds a reservation too", what)
		}
	}
	return ""
}

// ahead says whether new demand h (in t's queue) comes before the group of
// spec, last submitted at submitted: a group of higher priority, or an
// existing group (ungated, or its minMember changed) of the same, or a new
// one of the same priority created in the same second (the tie goes by
// name; a group's creation time has whole seconds).
func (r *run) ahead(h happening, spec groupSpec, submitted time.Time) bool {
	switch {
	case h.prio != spec.Priority:
		return h.prio > spec.Priority
	case h.kind != string(actSubmit):
		return true
	}
	return h.at.Unix() == submitted.Unix() || h.at.Sub(submitted).Abs() < time.Second
}

// lastSubmit is when group name was last submitted by to.
func (r *run) lastSubmit(name string, to time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var at time.Time
	for _, h := range r.happenings {
		if h.group == name && h.kind == string(actSubmit) && !h.at.After(to) {
			at = h.at
		}
	}
	return at
}

// boundOnto names a pod bound onto one of nodes (any, when the verdict
// named none) in [from, to], "" for none.
func (r *run) boundOnto(nodes []string, from, to time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.binds {
		if !b.at.Before(from) && !b.at.After(to) && (len(nodes) == 0 || slices.Contains(nodes, b.node)) {
			return "bound " + b.what + " in its room"
		}
	}
	return ""
}

// heldReservation says whether the generator's group name had a visible
// reservation in [from, to]. Called with w.mu held.
func (w *watcher) heldReservation(name string, from, to time.Time) bool {
	for _, o := range w.resv {
		if o.spec.Name == name && !o.eta.IsZero() && !o.since.After(to) {
			return true
		}
	}
	for _, s := range w.spans {
		if s.group == name && !s.to.Before(from) && !s.from.After(to) {
			return true
		}
	}
	return false
}

// reservedNodes are the nodes a verdict's reservation names.
func reservedNodes(verdict string) []string {
	_, after, ok := strings.Cut(verdict, "reserved from ")
	if !ok {
		return nil
	}
	_, list, ok := strings.Cut(after, " on ")
	if !ok {
		return nil
	}
	return strings.Split(list, ", ")
}

func isDemand(kind string) bool {
	return kind == string(actSubmit) || kind == string(actUngate) || kind == string(actMinMember)
}

// otherReservation names a reservation other than t's that may have been
// planned before it in a pass of [from, to] (the window less causeLag at
// its start: from+causeLag is when t was last seen), "" for none. A gang's
// shows late, by up to causeLag; a singleton's is judged from the harness's
// own view (a singleton's reservation ends with its admission, before the
// watch sees it bound). Only one kept since t was made can be planned
// before it.
// Called with w.mu held.
func (w *watcher) otherReservation(t *resvTrack, from, to time.Time) string {
	from = maxTime(from, t.since.Add(-causeLag))
	for _, o := range w.resv {
		if o.uid != t.uid && !o.eta.IsZero() && !o.since.After(to.Add(causeLag)) {
			return "reserved: " + o.pg
		}
	}
	for _, s := range w.spans {
		if s.uid != t.uid && !s.to.Before(from) && !s.from.After(to.Add(causeLag)) {
			return "reserved: " + s.group
		}
	}
	for _, s := range w.unfitSingles {
		if !s.to.Before(from) && !s.from.After(to) {
			return "a singleton waited that may hold a reservation"
		}
	}
	return ""
}

// restartNear reports a restart whose [kill, ready+restartSettle] meets
// [from, to].
func (r *run) restartNear(from, to time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// from+causeLag is when the reservation was last seen: a restart
	// matters if the new process may not have rewritten it by then.
	for _, w := range r.restarts {
		if !w[0].After(to) && !w[1].Add(restartSettle).Before(from.Add(causeLag)) {
			return w[0], true
		}
	}
	return time.Time{}, false
}

// windowLine lists what the harness did and saw in [from, to], bindings
// included, for a violation's report.
func (r *run) windowLine(from, to time.Time) string {
	r.mu.Lock()
	var out []string
	for _, h := range r.happenings {
		if !h.at.Before(from) && !h.at.After(to) {
			out = append(out, fmt.Sprintf("%v %s", r.trace.at(h.at), h.what))
		}
	}
	r.mu.Unlock()
	for _, b := range r.bindsWithin(from, to) {
		out = append(out, b)
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, "; ")
}

// bindsWithin lists the bindings the watch saw in [from, to].
func (r *run) bindsWithin(from, to time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.binds {
		if !b.at.Before(from) && !b.at.After(to) {
			out = append(out, fmt.Sprintf("%v bound %s", r.trace.at(b.at), b.what))
		}
	}
	return out
}

// specOfPodGroup is the generator's group of a PodGroup.
func (r *run) specOfPodGroup(name string) (groupSpec, bool) {
	for _, g := range r.sc.Groups {
		if !g.Singleton && g.podGroupName() == name {
			return g, true
		}
	}
	return groupSpec{}, false
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

func pgLine(pg pgView, g *groupState) string {
	line := fmt.Sprintf("verdict %q", pg.Verdict)
	if g != nil {
		line += "; " + groupLine(g)
	}
	return line
}
