package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/disruption"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/status"
)

// The members of a running gang carry the annotations that keep cluster
// autoscalers from scaling their nodes down (package disruption): a
// consolidation that evicts one member of a gang at minMember stops the
// whole job. A member is bound only once its gang's minimum is placed, so
// every bound member of a gang belongs to a gang that runs or is starting.
// The cache notes the bound members that lack them; the status writer,
// which writes only while the scheduler leads, patches them in.

// protectBook holds the bound gang members owed protection until the
// writer takes them. Members bound while the cache runs (fresh) are handed
// out before those the initial list found unprotected (backlog): the first
// start of a version that protects gangs finds every running member owed
// at once, and the writer patches a few a pass, so a gang that starts
// meanwhile would otherwise wait behind the whole backlog.
type protectBook struct {
	fresh, backlog map[types.UID]*v1.Pod
}

// note records pod as owed; fresh says it was noted after the initial
// list. A backlog member stays in the backlog whatever its later events.
func (b *protectBook) note(pod *v1.Pod, fresh bool) {
	if _, old := b.backlog[pod.UID]; old || !fresh {
		if b.backlog == nil {
			b.backlog = map[types.UID]*v1.Pod{}
		}
		b.backlog[pod.UID] = pod
		return
	}
	if b.fresh == nil {
		b.fresh = map[types.UID]*v1.Pod{}
	}
	b.fresh[pod.UID] = pod
}

// forget drops pod uid: it is protected, finished or gone.
func (b *protectBook) forget(uid types.UID) {
	delete(b.fresh, uid)
	delete(b.backlog, uid)
}

// take hands out at most limit members, fresh ones first, and forgets
// them. O(limit).
func (b *protectBook) take(limit int) []*v1.Pod {
	if limit <= 0 || len(b.fresh)+len(b.backlog) == 0 {
		return nil
	}
	out := make([]*v1.Pod, 0, min(limit, len(b.fresh)+len(b.backlog)))
	for _, m := range []map[types.UID]*v1.Pod{b.fresh, b.backlog} {
		for uid, p := range m {
			if len(out) == limit {
				return out
			}
			out = append(out, p)
			delete(m, uid)
		}
	}
	return out
}

// owes notes pod, a member of g as m records it, when it is owed
// protection (disruption.Owed), and forgets it otherwise; synced says
// whether the initial list is in (fresh members are handed out first).
// O(1).
func (b *protectBook) owes(g *gangbook.Group, m *gangbook.Member, pod *v1.Pod, synced *onceSignal) {
	owed := disruption.Owed(disruption.Member{
		Bound: m.State.Assigned, Finished: m.State.Phase.Terminal(),
		MinMember: g.Spec.MinMember, Annotations: pod.Annotations,
	})
	if !owed {
		b.forget(pod.UID)
		return
	}
	b.note(pod, synced.fired())
}

// Protection implements status.Source: the protection book as the status
// writer takes from it, each method under the cache's lock.
func (c *Cache) Protection() status.Protection { return protection{c: c} }

// protection is Cache.Protection: the methods the status writer calls,
// each taking the cache's lock around the protectBook's own.
type protection struct{ c *Cache }

// Take returns at most limit of the bound gang members noted that lack a
// protecting annotation, each once, those bound since the start first; the
// rest stay noted for later calls. O(limit).
func (p protection) Take(limit int) []*v1.Pod {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.c.protect.take(limit)
}

// Retry: pod's patch failed, hand it out again at the next pass while it
// is still a member.
func (p protection) Retry(pod *v1.Pod) {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, member := c.memberOf[pod.UID]; !member {
		return
	}
	c.protect.note(pod, true)
}
