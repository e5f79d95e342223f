package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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

// StartEvictions records the evictions of one plan, all or none: when
// another preemptor's eviction of one of the victims is still in flight,
// nothing is recorded and it returns false, so two plans never evict the
// same pod. A victim the cache no longer accounts has left already and is
// recorded as gone. O(victims) plus the stale entries it forgets.
func (c *Cache) StartEvictions(evs []Eviction, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startEvictionsLocked(evs, now)
}

// startEvictionsLocked is StartEvictions under the cache's lock.
func (c *Cache) startEvictionsLocked(evs []Eviction, now time.Time) bool {
	b := &c.evictions
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
		if c.adm == nil || c.adm.pods[e.Victim] == nil {
			b.leftLocked(e.Victim, now)
		}
	}
	return true
}

// EvictionsInFlight returns which of pods some plan, of any profile, is
// evicting. O(pods).
func (c *Cache) EvictionsInFlight(pods []*v1.Pod) map[types.UID]bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[types.UID]bool{}
	if len(c.evictions.entries) == 0 {
		return out
	}
	for _, p := range pods {
		if c.evictions.entries[p.UID] != nil {
			out[p.UID] = true
		}
	}
	return out
}

// AbandonEvictions forgets preemptor's evictions of victims when its plan
// is not carried out; another preemptor's entries stay. O(victims).
func (c *Cache) AbandonEvictions(preemptor types.UID, victims []types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, uid := range victims {
		if e := c.evictions.entries[uid]; e != nil && e.Preemptor == preemptor {
			c.evictions.dropLocked(uid)
		}
	}
}

// FinishEviction records the outcome of preemptor's eviction call for
// victim and returns the eviction, for its Events; ok is false when the
// book holds no such eviction. A failed eviction is forgotten at once, so
// the pod may be chosen again; a made one stays until the pod leaves. O(1).
func (c *Cache) FinishEviction(preemptor, victim types.UID, err error) (Eviction, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.evictions.entries[victim]
	if e == nil || e.Preemptor != preemptor {
		return Eviction{}, false
	}
	if err != nil || e.gone {
		c.evictions.dropLocked(victim)
	} else {
		e.done = true
	}
	return e.Eviction, true
}

// evictionLeftLocked is called when a pod leaves (deleted, or finished):
// its eviction, if any, is over. O(1) plus the stale entries it forgets.
func (c *Cache) evictionLeftLocked(uid types.UID, now time.Time) {
	b := &c.evictions
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

// HoldForGang records the nodes a gang's plan freed for its members (pod
// -> node), so that a member tried while the victims still leave is
// nominated to its node instead of planning again. It does nothing when
// the gang has no evictions in flight. O(members).
func (c *Cache) HoldForGang(group string, nodes map[types.UID]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gp := c.evictions.gangs[group]; gp != nil {
		gp.nodes = nodes
	}
}

// GangPlanInFlight says whether pod's gang (or pod, outside any gang) has a
// plan whose evictions are still in flight, and the node that plan freed
// for pod ("" when it counted pod among none of its members). A preemptor
// outside any gang is not planned for again either: a plan that freed room
// under its queue's capability may have evicted on other nodes than the
// one it is nominated to, where upstream's check for terminating victims
// does not look. O(1).
func (c *Cache) GangPlanInFlight(pod *v1.Pod) (node string, inFlight bool) {
	var pk string
	if key, ok := GroupKeyOf(pod); ok {
		pk = gangUnitKey(key).String()
	} else {
		pk = planKeyOf("", pod.UID)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	gp := c.evictions.gangs[pk]
	if gp == nil {
		return "", false
	}
	return gp.nodes[pod.UID], true
}

// gangPlanLocked: the gang has evictions in flight.
func (c *Cache) gangPlanLocked(key GroupKey) bool {
	return c.evictions.gangs[gangUnitKey(key).String()] != nil
}
