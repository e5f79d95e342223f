package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

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
func (e Evictions) Start(evs []admission.Eviction, now time.Time) bool {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	return e.c.evictions.Start(evs, now, admission.AccountedPods(e.c.adm))
}

// InFlight returns which of pods some plan, of any profile, is evicting.
// O(pods).
func (e Evictions) InFlight(pods []*v1.Pod) map[types.UID]bool {
	e.c.mu.RLock()
	defer e.c.mu.RUnlock()
	return e.c.evictions.InFlight(pods)
}

// Abandon forgets preemptor's evictions of victims when its plan is not
// carried out; another preemptor's entries stay. O(victims).
func (e Evictions) Abandon(preemptor types.UID, victims []types.UID) {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.c.evictions.Abandon(preemptor, victims)
}

// Finish records the outcome of preemptor's eviction call for victim and
// returns the eviction, for its Events, with the PodGroup victim belongs
// to (nil for none that exists), for the Event on it; ok is false when the
// book holds no such eviction. A failed eviction is forgotten at once, so
// the pod may be chosen again; a made one stays until the pod leaves. O(1).
func (e Evictions) Finish(preemptor types.UID, victim *v1.Pod, err error) (ev admission.Eviction, victimGroup *groupspec.Source, ok bool) {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	if ev, ok = e.c.evictions.Finish(preemptor, victim.UID, err); !ok {
		return ev, nil, false
	}
	return ev, admission.GroupSourceOf(e.c.groups, victim), true
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
	e.c.evictions.Hold(group, nodes)
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
		pk = admission.GangUnitKey(key).String()
	} else {
		pk = admission.PlanKeyOf("", pod.UID)
	}
	e.c.mu.RLock()
	defer e.c.mu.RUnlock()
	return e.c.evictions.Plan(pk, pod.UID)
}
