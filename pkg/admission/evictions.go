package admission

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
	// overrun says why a pod past its run-time limit is evicted for a
	// reservation (overrun.go), "" for a reclaim or preemption plan's
	// victim. Such an eviction's Preemptor names the reservation, not a
	// pod, and its Group is "": no gang's plan waits for it.
	overrun string
}

// AbandonAfter bounds how long the book keeps an eviction the Executor never
// reported. It skips victims that are already terminating, and when one
// eviction of a plan fails it drops the plan's last victim unreported; such
// an entry would otherwise wait for a report that never comes and, while its
// pod stays, mark the pod as leaving for every later plan.
const AbandonAfter = 2 * time.Minute

// EvictionBook holds the evictions in flight for every profile of the
// scheduler. It lives in the shared cache, not in a plugin instance: one
// profile's preemptor must see the victims another profile's plan is
// evicting, or it picks them again or counts their room twice.
type EvictionBook struct {
	Entries map[types.UID]*evictionEntry
	// Started holds every entry in the order it was recorded; an entry
	// still unreported AbandonAfter later is forgotten.
	Started []startedEntry
	// Gangs holds, per preemptor with evictions in flight (its gang, or
	// the pod itself outside any gang: PlanKeyOf), how many and the nodes
	// its plan freed for its members.
	Gangs map[string]*gangPlan
	// Overrun is what the admission pass keeps to find the pods that
	// overran their run-time limit into a reservation (overrun.go).
	Overrun overrunState
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

// AccountedPods is what the book asks of the admission side: the pods it
// accounts, nil (none) while admission is off.
func AccountedPods(a *State) map[types.UID]*PodAcct {
	if a == nil {
		return nil
	}
	return a.Pods
}

// GroupSourceOf names the PodGroup pod belongs to, of whatever dialect, or
// nil when it belongs to none that exists. O(1).
func GroupSourceOf(groups map[gangbook.GroupKey]*gangbook.Group, pod *v1.Pod) *groupspec.Source {
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

// GangPlan reports whether the gang of key has evictions in flight. O(1).
func (b *EvictionBook) GangPlan(key gangbook.GroupKey) bool {
	return b.Gangs[GangUnitKey(key).String()] != nil
}

// Start records evs, all or none (Evictions.Start); a victim pods does not
// account has left already. O(victims) plus the stale entries it forgets.
func (b *EvictionBook) Start(evs []Eviction, now time.Time, pods map[types.UID]*PodAcct) bool {
	b.sweepLocked(now)
	for _, e := range evs {
		if old := b.Entries[e.Victim]; old != nil && old.Preemptor != e.Preemptor {
			return false
		}
	}
	if b.Entries == nil {
		b.Entries = map[types.UID]*evictionEntry{}
	}
	for _, e := range evs {
		entry := &evictionEntry{Eviction: e}
		b.dropLocked(e.Victim) // the same preemptor's earlier entry, if any
		b.Entries[e.Victim] = entry
		if b.Gangs == nil {
			b.Gangs = map[string]*gangPlan{}
		}
		key := PlanKeyOf(e.Group, e.Preemptor)
		gp := b.Gangs[key]
		if gp == nil {
			gp = &gangPlan{}
			b.Gangs[key] = gp
		}
		gp.victims++
		b.Started = append(b.Started, startedEntry{at: now, entry: entry})
		if pods[e.Victim] == nil {
			b.leftLocked(e.Victim, now)
		}
	}
	return true
}

// InFlight returns which of pods the book holds. O(pods).
func (b *EvictionBook) InFlight(pods []*v1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	if len(b.Entries) == 0 {
		return out
	}
	for _, p := range pods {
		if b.Entries[p.UID] != nil {
			out[p.UID] = true
		}
	}
	return out
}

// Abandon forgets preemptor's entries for victims. O(victims).
func (b *EvictionBook) Abandon(preemptor types.UID, victims []types.UID) {
	for _, uid := range victims {
		if e := b.Entries[uid]; e != nil && e.Preemptor == preemptor {
			b.dropLocked(uid)
		}
	}
}

// Finish records the outcome of preemptor's eviction call for victim
// (Evictions.Finish). O(1).
func (b *EvictionBook) Finish(preemptor, victim types.UID, err error) (Eviction, bool) {
	e := b.Entries[victim]
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

// Hold records the nodes group's plan freed for its members, when it has
// one in flight. O(1).
func (b *EvictionBook) Hold(group string, nodes map[types.UID]string) {
	if gp := b.Gangs[group]; gp != nil {
		gp.nodes = nodes
	}
}

// Plan is the plan in flight for the preemptor of plan key pk, and the
// node it freed for member uid. O(1).
func (b *EvictionBook) Plan(pk string, uid types.UID) (node string, inFlight bool) {
	gp := b.Gangs[pk]
	if gp == nil {
		return "", false
	}
	return gp.nodes[uid], true
}

// PodLeft: pod uid left (deleted, or finished), so its eviction, if any,
// is over. O(1) plus the stale entries it forgets.
func (b *EvictionBook) PodLeft(uid types.UID, now time.Time) {
	if len(b.Entries) == 0 {
		return
	}
	b.sweepLocked(now)
	b.leftLocked(uid, now)
}

func (b *EvictionBook) leftLocked(uid types.UID, now time.Time) {
	e := b.Entries[uid]
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

// sweepLocked forgets the entries recorded more than AbandonAfter ago that
// were never reported. Entries are appended in time order, so it stops at
// the first young one; reported ones only leave the queue.
func (b *EvictionBook) sweepLocked(now time.Time) {
	for len(b.Started) > 0 && now.Sub(b.Started[0].at) > AbandonAfter {
		s := b.Started[0]
		b.Started[0] = startedEntry{}
		b.Started = b.Started[1:]
		// The entry may have been reported, abandoned or replaced since.
		if !s.entry.done && b.Entries[s.entry.Victim] == s.entry {
			b.dropLocked(s.entry.Victim)
		}
	}
	if len(b.Started) == 0 {
		b.Started = nil // let the backing array go
	}
}

// dropLocked forgets the eviction of uid; the last one of a gang's plan
// still to leave ends the plan. O(1).
func (b *EvictionBook) dropLocked(uid types.UID) {
	e := b.Entries[uid]
	if e == nil {
		return
	}
	delete(b.Entries, uid)
	if !e.gone {
		b.victimDoneLocked(e)
	}
}

// victimDoneLocked: e's victim no longer holds its preemptor's plan; the
// last one ends the plan. O(1).
func (b *EvictionBook) victimDoneLocked(e *evictionEntry) {
	key := PlanKeyOf(e.Group, e.Preemptor)
	if gp := b.Gangs[key]; gp != nil {
		if gp.victims--; gp.victims <= 0 {
			delete(b.Gangs, key)
		}
	}
}
