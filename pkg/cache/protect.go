package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/disruption"
)

// The members of a running gang carry the annotations that keep cluster
// autoscalers from scaling their nodes down (package disruption): a
// consolidation that evicts one member of a gang at minMember stops the
// whole job. A member is bound only once its gang's minimum is placed, so
// every bound member of a gang belongs to a gang that runs or is starting.
// The cache notes the bound members that lack them; the status writer,
// which writes only while the scheduler leads, patches them in.

// noteProtectLocked notes pod, a member of g as m records it, for the
// writer when it is owed protection (disruption.Owed), and forgets it
// otherwise. O(1).
func (c *Cache) noteProtectLocked(g *group, m *member, pod *v1.Pod) {
	owed := disruption.Owed(disruption.Member{
		Bound: m.state.Assigned, Finished: m.state.Phase.Terminal(),
		MinMember: g.spec.MinMember, Annotations: pod.Annotations,
	})
	if !owed {
		delete(c.protect, pod.UID)
		return
	}
	if c.protect == nil {
		c.protect = map[types.UID]*v1.Pod{}
	}
	c.protect[pod.UID] = pod
}

// PodsToProtect implements status.Source: at most limit of the bound gang
// members noted that lack a protecting annotation, each once; the rest
// stay noted for later calls. O(limit).
func (c *Cache) PodsToProtect(limit int) []*v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.protect) == 0 || limit <= 0 {
		return nil
	}
	out := make([]*v1.Pod, 0, min(limit, len(c.protect)))
	for uid, p := range c.protect {
		if len(out) == limit {
			break
		}
		out = append(out, p)
		delete(c.protect, uid)
	}
	return out
}

// RetryProtect implements status.Source: pod's patch failed, hand it out
// again at the next pass while it is still a member.
func (c *Cache) RetryProtect(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, member := c.memberOf[pod.UID]; !member {
		return
	}
	if c.protect == nil {
		c.protect = map[types.UID]*v1.Pod{}
	}
	c.protect[pod.UID] = pod
}
