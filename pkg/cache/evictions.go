package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/reclaim"
)

// Eviction is one victim of a reclaim or preemption plan and why it goes:
// what the victim's Events and the eviction metrics say.
type Eviction struct {
	Victim types.UID
	// Preemptor is the pod the plan makes room for; PreemptorName is its
	// namespace/name, for messages.
	Preemptor     types.UID
	PreemptorName string
	// Group is the preemptor's gang (its admission unit key, as in
	// reclaim.Preemptor.Group); "" for a pod outside any gang. While any
	// eviction of a gang's plan is in flight the gang keeps its admission
	// through a release and is not planned for again.
	Group string
	Mode  reclaim.Mode
	// Queue is the preemptor's queue, VictimQueue the victim's.
	Queue, VictimQueue string
	// Overrun says why a pod past its run-time limit is evicted for a
	// reservation (overrun.go), "" for a reclaim or preemption plan's
	// victim. Such an eviction's Preemptor names the reservation, not a
	// pod, and its Group is "": no gang's plan waits for it.
	Overrun string
}

// abandonAfter bounds how long the book keeps an eviction the Executor never
// reported. It skips victims that are already terminating, and when one
// eviction of a plan fails it drops the plan's last victim unreported; such
// an entry would otherwise wait for a report that never comes and, while its
// pod stays, mark the pod as leaving for every later plan.
const abandonAfter = 2 * time.Minute

// evictionBook holds the evictions in flight for every profile of the
// scheduler. It lives in the shared cache, not in a plugin instance: one
// profile's preemptor must see the victims another profile's plan is
// evicting, or it picks them again or counts their room twice.
type evictionBook struct {
	entries map[types.UID]*evictionEntry
	// started holds every entry in the order it was recorded; an entry
	// still unreported abandonAfter later is forgotten.
	started []startedEntry
	// gangs holds, per preemptor with evictions in flight (its gang, or
	// the pod itself outside any gang: planKeyOf), how many and the nodes
	// its plan freed for its members.
	gangs map[string]*gangPlan
	// overrun is what the admission pass keeps to find the pods that
	// overran their run-time limit into a reservation (overrun.go).
	overrun overrunState
}

// gangPlan is a gang's plan while its victims leave.
type gangPlan struct {
	// victims counts the plan's entries whose pod has not left yet.
	victims int
	// nodes: member pod -> the node the plan freed room on for it.
	nodes map[types.UID]string
}

type evictionEntry struct {
	Eviction
	// done: the Executor made the eviction call; from then on the entry
	// only waits for the pod to leave.
	done bool
	// gone: the pod left before that; the entry is kept for the victim's
	// Events until the Executor reports.
	gone bool
}

type startedEntry struct {
	at    time.Time
	entry *evictionEntry
}

// Evictions is the eviction book as the plugins use it: every method takes
// the cache's lock, so profiles running in parallel see one book. Take it
// with Cache.Evictions; the zero value is not usable.
type Evictions struct {
	c *Cache
}

// Evictions returns the book of the evictions in flight, shared by every
// profile (reclaim and preemption plans, and overruns).
func (c *Cache) Evictions() Evictions { return Evictions{c: c} }

// Start records the evictions of one plan, all or none: when another
// preemptor's eviction of one of the victims is still in flight, nothing
// is recorded and it returns false, so two plans never evict the same pod.
// A victim the cache no longer accounts has left already and is recorded
// as gone. O(victims) plus the stale entries it forgets.
func (e Evictions) Start(evs []Eviction, now time.Time) bool {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	return e.c.evictions.start(evs, now, accountedPods(e.c.adm))
}

// InFlight returns which of pods some plan, of any profile, is evicting.
// O(pods).
func (e Evictions) InFlight(pods []*v1.Pod) map[types.UID]bool {
	e.c.mu.RLock()
	defer e.c.mu.RUnlock()
	return e.c.evictions.inFlight(pods)
}

// Abandon forgets preemptor's evictions of victims when its plan is not
// carried out; another preemptor's entries stay. O(victims).
func (e Evictions) Abandon(preemptor types.UID, victims []types.UID) {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.c.evictions.abandon(preemptor, victims)
}

// Finish records the outcome of preemptor's eviction call for victim and
// returns the eviction, for its Events, with the PodGroup victim belongs
// to (nil for none that exists), for the Event on it; ok is false when the
// book holds no such eviction. A failed eviction is forgotten at once, so
// the pod may be chosen again; a made one stays until the pod leaves. O(1).
func (e Evictions) Finish(preemptor types.UID, victim *v1.Pod, err error) (ev Eviction, victimGroup *groupspec.Source, ok bool) {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	if ev, ok = e.c.evictions.finish(preemptor, victim.UID, err); !ok {
		return ev, nil, false
	}
	return ev, groupSourceOf(e.c.groups, victim), true
}

// HoldForGang records the nodes the plan of pod's gang (group) freed for
// its members (pod -> node), so that a member tried while the victims
// still leave is nominated to its node instead of planning again; nothing
// is recorded when the gang has no evictions in flight. It returns the
// members among nodes' keys as the cache last saw them, for nominating
// them now. O(members).
func (e Evictions) HoldForGang(pod *v1.Pod, group string, nodes map[types.UID]string) map[types.UID]*v1.Pod {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.c.evictions.hold(group, nodes)
	key, ok := gangbook.GroupKeyOf(pod)
	g := e.c.groups[key]
	if !ok || g == nil {
		return nil
	}
	out := make(map[types.UID]*v1.Pod, len(nodes))
	for uid := range nodes {
		if m := g.Members[uid]; m != nil && m.Pod != nil {
			out[uid] = m.Pod
		}
	}
	return out
}

// GangPlan says whether pod's gang (or pod, outside any gang) has a plan
// whose evictions are still in flight, and the node that plan freed for
// pod ("" when it counted pod among none of its members). A preemptor
// outside any gang is not planned for again either: a plan that freed room
// under its queue's capability may have evicted on other nodes than the
// one it is nominated to, where upstream's check for terminating victims
// does not look. O(1).
func (e Evictions) GangPlan(pod *v1.Pod) (node string, inFlight bool) {
	var pk string
	if key, ok := gangbook.GroupKeyOf(pod); ok {
		pk = gangUnitKey(key).String()
	} else {
		pk = planKeyOf("", pod.UID)
	}
	e.c.mu.RLock()
	defer e.c.mu.RUnlock()
	return e.c.evictions.plan(pk, pod.UID)
}

// accountedPods is what the book asks of the admission side: the pods it
// accounts, nil (none) while admission is off.
func accountedPods(a *admissionState) map[types.UID]*podAcct {
	if a == nil {
		return nil
	}
	return a.pods
}

// groupSourceOf names the PodGroup pod belongs to, of whatever dialect, or
// nil when it belongs to none that exists. O(1).
func groupSourceOf(groups map[gangbook.GroupKey]*gangbook.Group, pod *v1.Pod) *groupspec.Source {
	key, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return nil
	}
	if g := groups[key]; g != nil && g.Obj != nil {
		src := g.Obj.Source
		return &src
	}
	return nil
}

// gangPlan reports whether the gang of key has evictions in flight. O(1).
func (b *evictionBook) gangPlan(key gangbook.GroupKey) bool {
	return b.gangs[gangUnitKey(key).String()] != nil
}

// start records evs, all or none (Evictions.Start); a victim pods does not
// account has left already. O(victims) plus the stale entries it forgets.
func (b *evictionBook) start(evs []Eviction, now time.Time, pods map[types.UID]*podAcct) bool {
	b.sweepLocked(now)
	for _, e := range evs {
		if old := b.entries[e.Victim]; old != nil && old.Preemptor != e.Preemptor {
			return false
		}
	}
	if b.entries == nil {
		b.entries = map[types.UID]*evictionEntry{}
	}
	for _, e := range evs {
		entry := &evictionEntry{Eviction: e}
		b.dropLocked(e.Victim) // the same preemptor's earlier entry, if any
		b.entries[e.Victim] = entry
		if b.gangs == nil {
			b.gangs = map[string]*gangPlan{}
		}
		key := planKeyOf(e.Group, e.Preemptor)
		gp := b.gangs[key]
		if gp == nil {
			gp = &gangPlan{}
			b.gangs[key] = gp
		}
		gp.victims++
		b.started = append(b.started, startedEntry{at: now, entry: entry})
		if pods[e.Victim] == nil {
			b.leftLocked(e.Victim, now)
		}
	}
	return true
}

// inFlight returns which of pods the book holds. O(pods).
func (b *evictionBook) inFlight(pods []*v1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	if len(b.entries) == 0 {
		return out
	}
	for _, p := range pods {
		if b.entries[p.UID] != nil {
			out[p.UID] = true
		}
	}
	return out
}

// abandon forgets preemptor's entries for victims. O(victims).
func (b *evictionBook) abandon(preemptor types.UID, victims []types.UID) {
	for _, uid := range victims {
		if e := b.entries[uid]; e != nil && e.Preemptor == preemptor {
			b.dropLocked(uid)
		}
	}
}

// finish records the outcome of preemptor's eviction call for victim
// (Evictions.Finish). O(1).
func (b *evictionBook) finish(preemptor, victim types.UID, err error) (Eviction, bool) {
	e := b.entries[victim]
	if e == nil || e.Preemptor != preemptor {
		return Eviction{}, false
	}
	if err != nil || e.gone {
		b.dropLocked(victim)
	} else {
		e.done = true
	}
	return e.Eviction, true
}

// hold records the nodes group's plan freed for its members, when it has
// one in flight. O(1).
func (b *evictionBook) hold(group string, nodes map[types.UID]string) {
	if gp := b.gangs[group]; gp != nil {
		gp.nodes = nodes
	}
}

// plan is the plan in flight for the preemptor of plan key pk, and the
// node it freed for member uid. O(1).
func (b *evictionBook) plan(pk string, uid types.UID) (node string, inFlight bool) {
	gp := b.gangs[pk]
	if gp == nil {
		return "", false
	}
	return gp.nodes[uid], true
}

// podLeft: pod uid left (deleted, or finished), so its eviction, if any,
// is over. O(1) plus the stale entries it forgets.
func (b *evictionBook) podLeft(uid types.UID, now time.Time) {
	if len(b.entries) == 0 {
		return
	}
	b.sweepLocked(now)
	b.leftLocked(uid, now)
}

func (b *evictionBook) leftLocked(uid types.UID, now time.Time) {
	e := b.entries[uid]
	switch {
	case e == nil || e.gone:
	case e.done:
		b.dropLocked(uid)
	default:
		// The Executor may never report it (upstream skips victims
		// already terminating and cancels the rest of a plan when one
		// eviction fails): the entry stays for the victim's Events, but
		// the plan no longer waits for it.
		e.gone = true
		b.victimDoneLocked(e)
	}
}

// sweepLocked forgets the entries recorded more than abandonAfter ago that
// were never reported. Entries are appended in time order, so it stops at
// the first young one; reported ones only leave the queue.
func (b *evictionBook) sweepLocked(now time.Time) {
	for len(b.started) > 0 && now.Sub(b.started[0].at) > abandonAfter {
		s := b.started[0]
		b.started[0] = startedEntry{}
		b.started = b.started[1:]
		// The entry may have been reported, abandoned or replaced since.
		if !s.entry.done && b.entries[s.entry.Victim] == s.entry {
			b.dropLocked(s.entry.Victim)
		}
	}
	if len(b.started) == 0 {
		b.started = nil // let the backing array go
	}
}

// dropLocked forgets the eviction of uid; the last one of a gang's plan
// still to leave ends the plan. O(1).
func (b *evictionBook) dropLocked(uid types.UID) {
	e := b.entries[uid]
	if e == nil {
		return
	}
	delete(b.entries, uid)
	if !e.gone {
		b.victimDoneLocked(e)
	}
}

// victimDoneLocked: e's victim no longer holds its preemptor's plan; the
// last one ends the plan. O(1).
func (b *evictionBook) victimDoneLocked(e *evictionEntry) {
	key := planKeyOf(e.Group, e.Preemptor)
	if gp := b.gangs[key]; gp != nil {
		if gp.victims--; gp.victims <= 0 {
			delete(b.gangs, key)
		}
	}
}
