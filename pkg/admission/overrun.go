package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/plan"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/pkg/status"
)

// OverrunGrace is how far past its limit a pod must be to be evicted as
// an overrun: a pod that ends at its limit is seen finishing a moment
// later (the kubelet's status report, then the informer), and evicting it
// meanwhile would count a finished job as a broken promise. It delays a
// due reservation by as much when an overrun does happen.
const OverrunGrace = 5 * time.Second

// graceSeconds is OverrunGrace in the plan's whole seconds.
const graceSeconds = int64(OverrunGrace / time.Second)

// ReasonOverranRunLimit is the reason of the Events about a pod evicted for
// running past its run-time limit into a reservation.
const ReasonOverranRunLimit = status.ReasonOverranRunLimit

// overrunState is what the pass keeps between passes to find the pods that
// overran into a reservation; guarded by Cache.mu.
type overrunState struct {
	// ByNode indexes State.ends by node, and nodeOf records each
	// indexed pod's node. Nil until a reservation comes due; then kept by
	// the marks synced, the release timeline, takes of changed ends.
	ByNode map[string]map[types.UID]struct{}
	nodeOf map[types.UID]string
	synced *plan.Timeline
	// since is, per kept reservation, the earliest start it was given:
	// what its evictions' messages name.
	since map[queue.Key]int64
	// queued are the evictions chosen and not yet handed to the status
	// writer; preemptor is the eviction book's key of each handed out.
	queued    []status.OverrunEviction
	preemptor map[types.UID]types.UID
}

// overrunEviction is one eviction a pass chose, for the status writer to
// make (OverrunEvictions).
type overrunEviction struct {
	pod       *v1.Pod
	queue     string    // the pod's queue, for the eviction counter
	preemptor types.UID // the reservation's key in the eviction book
	msg       string
	// victimGroup is the pod's PodGroup (nil for none); reserved is the
	// reservation's PodGroup (or pod), named by reservedBy's recorder.
	victimGroup *groupspec.Source
	reserved    runtime.Object
	reservedBy  string
}

// overrunCandidate is a pod past an annotation's limit on a reserved node.
type overrunCandidate struct {
	pod   *v1.Pod
	acct  *PodAcct
	group *gangbook.Group
	lim   runlimit.Limit
	end   int64 // by the annotation, Unix seconds
}

// overrunInput is what choosing overruns reads of the cache under its
// lock: the admission side, the gangs, the node rooms and reservations,
// the replica's leadership (nil: always leading), and the eviction book
// the evictions chosen are recorded in.
type overrunInput struct {
	Adm      *State
	Groups   map[gangbook.GroupKey]*gangbook.Group
	Feasible *FeasibleState
	Lead     *status.Leadership
	Book     *EvictionBook
}

// choose, at the start of a pass at now, returns the pods to evict for the
// due reservations of in.feasible, recorded in in.book; queue hands them
// to the status writer. O(pods whose end changed) per pass that keeps a
// reservation, plus O(pods with a limit on the nodes) per due reservation.
func (o *overrunState) choose(in overrunInput, now time.Time) []overrunEviction {
	a, f := in.Adm, in.Feasible
	if !a.Opts.EvictOverruns || len(f.Timed) == 0 {
		*o = overrunState{}
		return nil
	}
	o.Follow(&f.Releases, a.Ends)
	o.noteStarts(f)
	if in.Lead != nil {
		if _, leading := in.Lead.Leading(time.Now()); !leading {
			return nil
		}
	}
	var out []overrunEviction
	var claimed map[string]resources.List
	for _, t := range f.Timed {
		u := a.Units[t.Key]
		if t.Start > now.Unix() || u == nil || u.Admitted {
			continue
		}
		o.Build(&f.Releases, a.Ends)
		if claimed == nil {
			claimed = map[string]resources.List{}
		}
		out = append(out, o.victims(in, t, u, now, claimed)...)
	}
	return out
}

// victims chooses the evictions that give due reservation t, of unit u,
// the room it needs on every one of its nodes beyond what the reservations
// before it in this pass claimed there, records them and adds its need to
// claimed; none when some node would still lack room.
func (o *overrunState) victims(in overrunInput, t Timed, u *Unit, now time.Time, claimed map[string]resources.List) []overrunEviction {
	var chosen []overrunCandidate
	for i, n := range t.Nodes {
		node := in.Feasible.Rooms.Node(n)
		if node == nil || node.Obj == nil {
			return nil
		}
		need := t.Need[i].Clone().Add(claimed[n])
		free := node.Alloc.Clone().Sub(node.Used)
		var cands []overrunCandidate
		for uid := range o.ByNode[n] {
			cand, leaving, ok := in.overdue(uid, n, now.Unix())
			switch {
			case leaving:
				free.Add(in.Adm.Ends[uid].req)
			case ok:
				cands = append(cands, cand)
			}
		}
		short := need.Less(free)
		if short.IsZero() {
			continue
		}
		slices.SortFunc(cands, func(x, y overrunCandidate) int {
			if d := cmp.Compare(x.end, y.end); d != 0 {
				return d // longest overdue first
			}
			return strings.Compare(x.pod.Namespace+"/"+x.pod.Name, y.pod.Namespace+"/"+y.pod.Name)
		})
		for _, cd := range cands {
			if !helps(short, cd.acct.Req) {
				continue
			}
			chosen = append(chosen, cd)
			free.Add(cd.acct.Req)
			if short = need.Less(free); short.IsZero() {
				break
			}
		}
		if !short.IsZero() {
			return nil
		}
	}
	for i, n := range t.Nodes {
		claimed[n] = claimed[n].Add(t.Need[i])
	}
	slices.SortStableFunc(chosen, func(x, y overrunCandidate) int { return cmp.Compare(x.end, y.end) })
	return o.start(in, t, u, chosen, now)
}

// overdue says what the pod uid, indexed on node, is to a due reservation
// at now: leaving (terminating, being evicted, or past a deadline someone
// enforces), a candidate (a pod of Caldera's queues past the limit its
// annotation declares), or neither (it holds its room).
func (in overrunInput) overdue(uid types.UID, node string, now int64) (cand overrunCandidate, leaving, ok bool) {
	a := in.Adm
	e, tracked := a.Ends[uid]
	if !tracked || e.Node != node {
		return cand, false, false
	}
	if in.Book.Entries[uid] != nil {
		return cand, true, false
	}
	acct := a.Pods[uid]
	if acct == nil || !acct.Bound || acct.Queue == "" {
		return cand, false, false // not Caldera's to judge: it holds its room
	}
	pod, g := in.podOf(uid, acct)
	switch {
	case pod == nil:
		return cand, false, false
	case pod.DeletionTimestamp != nil:
		return cand, true, false
	case e.end+graceSeconds > now:
		return cand, false, false
	}
	lim, _ := a.LimitOfPod(pod, GroupAnnotations(g))
	if lim.Source != runlimit.PodAnnotation && lim.Source != runlimit.GroupAnnotation {
		return cand, true, false // a deadline: the kubelet or the Job controller stops the pod
	}
	end := runlimit.EndOf(e.start, lim)
	if end+graceSeconds > now {
		return cand, false, false // not past it (the end tracked was older)
	}
	return overrunCandidate{pod: pod, acct: acct, group: g, lim: lim, end: end}, false, true
}

// podOf is the pod uid accounted as acct, as the cache last saw it, with
// its gang (nil for a singleton); nil when the cache keeps no copy (a pod
// in no unit).
func (in overrunInput) podOf(uid types.UID, acct *PodAcct) (*v1.Pod, *gangbook.Group) {
	switch {
	case acct.Unit.IsZero():
		return nil, nil
	case acct.Unit.Kind == queue.KindGroup:
		g := in.Groups[gangbook.GroupKey{Namespace: acct.Unit.Namespace, Name: acct.Unit.Name}]
		if g == nil || g.Members[uid] == nil {
			return nil, nil
		}
		return g.Members[uid].Pod, g
	}
	if u := in.Adm.Units[acct.Unit]; u != nil && u.Pod != nil && u.Pod.UID == uid {
		return u.Pod, nil
	}
	return nil, nil
}

// helps reports whether req frees some of what short lacks.
func helps(short, req resources.List) bool {
	for k, v := range short {
		if v > 0 && req[k] > 0 {
			return true
		}
	}
	return false
}

// start records the evictions of chosen for reservation t, of unit u, in
// in.book and returns them.
func (o *overrunState) start(in overrunInput, t Timed, u *Unit, chosen []overrunCandidate, now time.Time) []overrunEviction {
	if len(chosen) == 0 {
		return nil
	}
	pre := types.UID("overrun:" + t.Key.String())
	from := t.Start
	if s, ok := o.since[t.Key]; ok && s < from {
		from = s
	}
	since := time.Unix(from, 0).UTC().Format(time.RFC3339)
	var reserved runtime.Object
	var reservedBy string
	if u.Gang != nil && u.Gang.Obj != nil {
		reserved, reservedBy = status.GroupRef(u.Gang.Obj.Source), u.Gang.ProfileLocked()
	} else if u.Pod != nil {
		reserved, reservedBy = u.Pod, u.Pod.Spec.SchedulerName
	}
	out := make([]overrunEviction, 0, len(chosen))
	evs := make([]Eviction, 0, len(chosen))
	for _, cd := range chosen {
		msg := fmt.Sprintf("ran %ds past its run-time limit of %ds (%s %s) into the reservation of %s from %s",
			now.Unix()-cd.end, cd.lim.Seconds, cd.lim.Source, runlimit.Annotation, t.Key, since)
		e := overrunEviction{pod: cd.pod, queue: cd.acct.Queue, preemptor: pre, msg: msg, reserved: reserved, reservedBy: reservedBy}
		if cd.group != nil && cd.group.Obj != nil {
			src := cd.group.Obj.Source
			e.victimGroup = &src
		}
		out = append(out, e)
		evs = append(evs, Eviction{Victim: cd.pod.UID, Preemptor: pre, PreemptorName: t.Key.String(),
			Queue: u.Queue, VictimQueue: cd.acct.Queue, overrun: msg})
	}
	// The book's clock is the wall clock, as its other users' (the pass's
	// now is the same outside tests). None of chosen is in the book
	// (overdue), so this records them all.
	in.Book.Start(evs, time.Now(), in.Adm.Pods)
	return out
}

// Queue hands evs to the status writer (take). O(len(evs)).
func (o *overrunState) Queue(evs []overrunEviction) {
	for _, e := range evs {
		se := status.OverrunEviction{Pod: e.pod, Queue: e.queue, Message: e.msg, Reserved: e.reserved, ReservedBy: e.reservedBy}
		if e.victimGroup != nil {
			se.VictimGroup = status.GroupRef(*e.victimGroup)
		}
		if o.preemptor == nil {
			o.preemptor = map[types.UID]types.UID{}
		}
		o.preemptor[e.pod.UID] = e.preemptor
		o.queued = append(o.queued, se)
	}
}

// Take returns the evictions queued since the last call, in the order
// chosen, and forgets them.
func (o *overrunState) Take() []status.OverrunEviction {
	out := o.queued
	o.queued = nil
	return out
}

// FinishOverrun records the outcome of the status writer's eviction of
// pod uid (Cache.FinishOverrun); false when no pass chose it.
func (b *EvictionBook) FinishOverrun(uid types.UID, err error) bool {
	pre, ok := b.Overrun.preemptor[uid]
	delete(b.Overrun.preemptor, uid)
	if !ok {
		return false
	}
	_, ok = b.Finish(pre, uid, err)
	return ok
}

// Follow applies to the index the ends changed since the last pass: the
// release timeline marks them until its next pass that plans takes them.
// An index built for another timeline, or for none, is dropped: marks were
// taken, or never made, without it. O(pods whose end changed).
func (o *overrunState) Follow(r *releases, ends map[types.UID]podEnd) {
	if o.ByNode == nil {
		return
	}
	if r.tl == nil || r.tl != o.synced {
		o.ByNode, o.nodeOf, o.synced = nil, nil, nil
		return
	}
	for uid := range r.changed {
		o.put(uid, ends)
	}
}

// Build indexes every pod with a limit by node, unless the index is kept
// already. O(pods with a limit), once per due episode at most.
func (o *overrunState) Build(r *releases, ends map[types.UID]podEnd) {
	if o.ByNode != nil {
		return
	}
	o.ByNode = map[string]map[types.UID]struct{}{}
	o.nodeOf = make(map[types.UID]string, len(ends))
	o.synced = r.tl
	for uid := range ends {
		o.put(uid, ends)
	}
}

// put indexes uid where ends has it now, or nowhere. O(1).
func (o *overrunState) put(uid types.UID, ends map[types.UID]podEnd) {
	e, ok := ends[uid]
	if old, had := o.nodeOf[uid]; had {
		if ok && e.Node == old {
			return
		}
		delete(o.ByNode[old], uid)
		if len(o.ByNode[old]) == 0 {
			delete(o.ByNode, old)
		}
		delete(o.nodeOf, uid)
	}
	if !ok {
		return
	}
	set := o.ByNode[e.Node]
	if set == nil {
		set = map[types.UID]struct{}{}
		o.ByNode[e.Node] = set
	}
	set[uid] = struct{}{}
	o.nodeOf[uid] = e.Node
}

// noteStarts keeps, for each of f's kept reservations, the earliest start
// it was given, and forgets the reservations no longer kept.
// O(reservations).
func (o *overrunState) noteStarts(f *FeasibleState) {
	if o.since == nil {
		o.since = map[queue.Key]int64{}
	}
	for _, t := range f.Timed {
		if s, ok := o.since[t.Key]; !ok || t.Start < s {
			o.since[t.Key] = t.Start
		}
	}
	for k := range o.since {
		if _, ok := f.TimedBy[k]; !ok {
			delete(o.since, k)
		}
	}
}
