package cache

// A run-time limit declared by annotation (scheduling.caldera.dev/max-run-
// seconds, on the pod or on its PodGroup) is a promise: unlike
// activeDeadlineSeconds, which the kubelet enforces, nothing stops a pod
// that runs past it. Reservations (timeplan.go) are planned on those
// promises: a reservation starts when the pods on its nodes have ended by
// their limits, and later work is let into its room only if it promises to
// end first (backfill). A pod that breaks its promise still holds the room
// at the reservation's start; the plan expects it back at any moment, and
// the reservation would move later pass by pass for as long as it runs.
//
// So when a reservation's start has come (the start the last pass kept is
// not after now) and its group is still not admitted, the pass evicts pods
// on the reservation's nodes that are past a limit they declared by
// annotation: on each node as few as free the room the reservation needs
// there, longest overdue first.
//
//   - Any such pod of Caldera's queues on those nodes, not only one let in
//     as backfill: the reservation's start was planned on the promised end
//     of every pod there, those that ran before it was made as much as
//     those let in around it. The rule needs no memory of how a pod was
//     admitted, so it holds across a restart and is the same on every
//     replica.
//   - Past the limit that counts (limitOfPod: the smallest wins) and that
//     limit an annotation's. A pod past an activeDeadlineSeconds, its own
//     or its Job's, is the kubelet's or the Job controller's to stop: its
//     room counts as leaving, as does that of pods already terminating or
//     being evicted.
//     Pods Caldera did not admit through a queue (other schedulers' pods,
//     singletons while admitSingletons is off) are never evicted: their
//     room counts as held.
//   - Nothing is evicted for a reservation unless every one of its nodes
//     then has the room it needs: an eviction that starts no one is not
//     made.
//
// The status writer makes the evictions (status.EvictOverruns), the way
// CalderaReclaim's victims go (upstream's preemption Executor): the
// DisruptionTarget condition, then a DELETE that honours the pod's grace
// period, with Events on the pod, its PodGroup and the reserved group. They are in the eviction book (evictions.go) until
// the pod leaves, so neither a later pass nor a reclaim plan counts the
// room twice. Only the replica that schedules evicts.
//
// Cost: nothing while no reservation is kept; per pass that keeps one,
// O(pods whose end changed since the last pass); per due reservation,
// O(pods with a limit on its nodes). The per-node index of the pods with a
// limit is built (one walk of them) when a reservation first comes due and
// kept from pass to pass by the release timeline's marks (releases.go).

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

// overrunGrace is how far past its limit a pod must be to be evicted as
// an overrun: a pod that ends at its limit is seen finishing a moment
// later (the kubelet's status report, then the informer), and evicting it
// meanwhile would count a finished job as a broken promise. It delays a
// due reservation by as much when an overrun does happen.
const overrunGrace = 5 * time.Second

// graceSeconds is overrunGrace in the plan's whole seconds.
const graceSeconds = int64(overrunGrace / time.Second)

// ReasonOverranRunLimit is the reason of the Events about a pod evicted for
// running past its run-time limit into a reservation.
const ReasonOverranRunLimit = status.ReasonOverranRunLimit

// overrunState is what the pass keeps between passes to find the pods that
// overran into a reservation; guarded by Cache.mu.
type overrunState struct {
	// byNode indexes admissionState.ends by node, and nodeOf records each
	// indexed pod's node. Nil until a reservation comes due; then kept by
	// the marks synced, the release timeline, takes of changed ends.
	byNode map[string]map[types.UID]struct{}
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
	acct  *podAcct
	group *gangbook.Group
	lim   runlimit.Limit
	end   int64 // by the annotation, Unix seconds
}

// overrunInput is what choosing overruns reads of the cache under its
// lock: the admission side, the gangs, the node rooms and reservations,
// the replica's leadership (nil: always leading), and the eviction book
// the evictions chosen are recorded in.
type overrunInput struct {
	adm      *admissionState
	groups   map[gangbook.GroupKey]*gangbook.Group
	feasible *feasibleState
	lead     *status.Leadership
	book     *evictionBook
}

// OverrunEvictions implements status.Source: the evictions passes chose
// since the last call, in the order chosen.
func (c *Cache) OverrunEvictions() []status.OverrunEviction {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictions.overrun.take()
}

// FinishOverrun implements status.Source: a made eviction stays in the
// eviction book until its pod leaves; a failed one leaves it, so a later
// pass may choose the pod again.
func (c *Cache) FinishOverrun(e status.OverrunEviction, err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictions.finishOverrun(e.Pod.UID, err)
}

// choose, at the start of a pass at now, returns the pods to evict for the
// due reservations of in.feasible, recorded in in.book; queue hands them
// to the status writer. O(pods whose end changed) per pass that keeps a
// reservation, plus O(pods with a limit on the nodes) per due reservation.
func (o *overrunState) choose(in overrunInput, now time.Time) []overrunEviction {
	a, f := in.adm, in.feasible
	if !a.opts.EvictOverruns || len(f.timed) == 0 {
		*o = overrunState{}
		return nil
	}
	o.follow(&f.releases, a.ends)
	o.noteStarts(f)
	if in.lead != nil {
		if _, leading := in.lead.Leading(time.Now()); !leading {
			return nil
		}
	}
	var out []overrunEviction
	var claimed map[string]resources.List
	for _, t := range f.timed {
		u := a.units[t.key]
		if t.start > now.Unix() || u == nil || u.admitted {
			continue
		}
		o.build(&f.releases, a.ends)
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
func (o *overrunState) victims(in overrunInput, t timed, u *unit, now time.Time, claimed map[string]resources.List) []overrunEviction {
	var chosen []overrunCandidate
	for i, n := range t.nodes {
		node := in.feasible.rooms.Node(n)
		if node == nil || node.Obj == nil {
			return nil
		}
		need := t.need[i].Clone().Add(claimed[n])
		free := node.Alloc.Clone().Sub(node.Used)
		var cands []overrunCandidate
		for uid := range o.byNode[n] {
			cand, leaving, ok := in.overdue(uid, n, now.Unix())
			switch {
			case leaving:
				free.Add(in.adm.ends[uid].req)
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
			if !helps(short, cd.acct.req) {
				continue
			}
			chosen = append(chosen, cd)
			free.Add(cd.acct.req)
			if short = need.Less(free); short.IsZero() {
				break
			}
		}
		if !short.IsZero() {
			return nil
		}
	}
	for i, n := range t.nodes {
		claimed[n] = claimed[n].Add(t.need[i])
	}
	slices.SortStableFunc(chosen, func(x, y overrunCandidate) int { return cmp.Compare(x.end, y.end) })
	return o.start(in, t, u, chosen, now)
}

// overdue says what the pod uid, indexed on node, is to a due reservation
// at now: leaving (terminating, being evicted, or past a deadline someone
// enforces), a candidate (a pod of Caldera's queues past the limit its
// annotation declares), or neither (it holds its room).
func (in overrunInput) overdue(uid types.UID, node string, now int64) (cand overrunCandidate, leaving, ok bool) {
	a := in.adm
	e, tracked := a.ends[uid]
	if !tracked || e.node != node {
		return cand, false, false
	}
	if in.book.entries[uid] != nil {
		return cand, true, false
	}
	acct := a.pods[uid]
	if acct == nil || !acct.bound || acct.queue == "" {
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
	lim, _ := a.limitOfPod(pod, groupAnnotations(g))
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
func (in overrunInput) podOf(uid types.UID, acct *podAcct) (*v1.Pod, *gangbook.Group) {
	switch {
	case acct.unit.IsZero():
		return nil, nil
	case acct.unit.Kind == queue.KindGroup:
		g := in.groups[gangbook.GroupKey{Namespace: acct.unit.Namespace, Name: acct.unit.Name}]
		if g == nil || g.Members[uid] == nil {
			return nil, nil
		}
		return g.Members[uid].Pod, g
	}
	if u := in.adm.units[acct.unit]; u != nil && u.pod != nil && u.pod.UID == uid {
		return u.pod, nil
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
func (o *overrunState) start(in overrunInput, t timed, u *unit, chosen []overrunCandidate, now time.Time) []overrunEviction {
	if len(chosen) == 0 {
		return nil
	}
	pre := types.UID("overrun:" + t.key.String())
	from := t.start
	if s, ok := o.since[t.key]; ok && s < from {
		from = s
	}
	since := time.Unix(from, 0).UTC().Format(time.RFC3339)
	var reserved runtime.Object
	var reservedBy string
	if u.gang != nil && u.gang.Obj != nil {
		reserved, reservedBy = status.GroupRef(u.gang.Obj.Source), u.gang.ProfileLocked()
	} else if u.pod != nil {
		reserved, reservedBy = u.pod, u.pod.Spec.SchedulerName
	}
	out := make([]overrunEviction, 0, len(chosen))
	evs := make([]Eviction, 0, len(chosen))
	for _, cd := range chosen {
		msg := fmt.Sprintf("ran %ds past its run-time limit of %ds (%s %s) into the reservation of %s from %s",
			now.Unix()-cd.end, cd.lim.Seconds, cd.lim.Source, runlimit.Annotation, t.key, since)
		e := overrunEviction{pod: cd.pod, queue: cd.acct.queue, preemptor: pre, msg: msg, reserved: reserved, reservedBy: reservedBy}
		if cd.group != nil && cd.group.Obj != nil {
			src := cd.group.Obj.Source
			e.victimGroup = &src
		}
		out = append(out, e)
		evs = append(evs, Eviction{Victim: cd.pod.UID, Preemptor: pre, PreemptorName: t.key.String(),
			Queue: u.queue, VictimQueue: cd.acct.queue, Overrun: msg})
	}
	// The book's clock is the wall clock, as its other users' (the pass's
	// now is the same outside tests). None of chosen is in the book
	// (overdue), so this records them all.
	in.book.start(evs, time.Now(), in.adm.pods)
	return out
}

// queue hands evs to the status writer (take). O(len(evs)).
func (o *overrunState) queue(evs []overrunEviction) {
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

// take returns the evictions queued since the last call, in the order
// chosen, and forgets them.
func (o *overrunState) take() []status.OverrunEviction {
	out := o.queued
	o.queued = nil
	return out
}

// finishOverrun records the outcome of the status writer's eviction of
// pod uid (Cache.FinishOverrun); false when no pass chose it.
func (b *evictionBook) finishOverrun(uid types.UID, err error) bool {
	pre, ok := b.overrun.preemptor[uid]
	delete(b.overrun.preemptor, uid)
	if !ok {
		return false
	}
	_, ok = b.finish(pre, uid, err)
	return ok
}

// follow applies to the index the ends changed since the last pass: the
// release timeline marks them until its next pass that plans takes them.
// An index built for another timeline, or for none, is dropped: marks were
// taken, or never made, without it. O(pods whose end changed).
func (o *overrunState) follow(r *releases, ends map[types.UID]podEnd) {
	if o.byNode == nil {
		return
	}
	if r.tl == nil || r.tl != o.synced {
		o.byNode, o.nodeOf, o.synced = nil, nil, nil
		return
	}
	for uid := range r.changed {
		o.put(uid, ends)
	}
}

// build indexes every pod with a limit by node, unless the index is kept
// already. O(pods with a limit), once per due episode at most.
func (o *overrunState) build(r *releases, ends map[types.UID]podEnd) {
	if o.byNode != nil {
		return
	}
	o.byNode = map[string]map[types.UID]struct{}{}
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
		if ok && e.node == old {
			return
		}
		delete(o.byNode[old], uid)
		if len(o.byNode[old]) == 0 {
			delete(o.byNode, old)
		}
		delete(o.nodeOf, uid)
	}
	if !ok {
		return
	}
	set := o.byNode[e.node]
	if set == nil {
		set = map[types.UID]struct{}{}
		o.byNode[e.node] = set
	}
	set[uid] = struct{}{}
	o.nodeOf[uid] = e.node
}

// noteStarts keeps, for each of f's kept reservations, the earliest start
// it was given, and forgets the reservations no longer kept.
// O(reservations).
func (o *overrunState) noteStarts(f *feasibleState) {
	if o.since == nil {
		o.since = map[queue.Key]int64{}
	}
	for _, t := range f.timed {
		if s, ok := o.since[t.key]; !ok || t.start < s {
			o.since[t.key] = t.start
		}
	}
	for k := range o.since {
		if _, ok := f.timedBy[k]; !ok {
			delete(o.since, k)
		}
	}
}
