package cache

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Gangs asked for by annotation (pkg/dialect/annotation). GroupKeyOf puts
// the pods that carry scheduling.caldera.dev/gang-min-member and share a
// controller into the group annotation.GroupOf names; the rest of the
// cache treats that group like any other. The dialect's Book keeps what is
// particular to them; the cache calls it under Cache.mu and queues what
// members are told as Warning Events. Every method is O(1) per pod event.

// podNotices are the Events about pods queued for the writer; noticed are
// the pods told already, so each is told once while it exists.
type podNotices struct {
	queued  map[types.UID]status.PodNotice
	noticed map[types.UID]struct{}
}

// implicitMember reports whether pod is in its group by the gang
// annotation, not by a name given (the pod-group label, or Volcano's
// group-name annotation: GroupKeyOf's order).
func implicitMember(pod *v1.Pod) bool {
	if pod.Labels[gangbook.PodGroupLabel] != "" {
		return false
	}
	_, named := gangbook.PodGroupName(pod)
	return !named
}

// implicitLeftover reports whether pod, terminating, is left over from a
// deleted controller object of the name whose gang by annotation the
// group key is, as book records it (annotation.Book.Leftover). O(1).
func implicitLeftover(book *annotation.Book, key gangbook.GroupKey, pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil && implicitMember(pod) && book.Leftover(key.Named(), pod)
}

// PodGroupsToCreate implements status.Source: the gangs asked for by
// annotation whose PodGroup does not exist (annotation.Book.ToCreate).
func (c *Cache) PodGroupsToCreate() []annotation.ToCreate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.implicit.ToCreate(time.Now())
}

// PodNotices implements status.Source.
func (c *Cache) PodNotices() []status.PodNotice {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notices.take()
}

// note queues a Warning Event about pod, unless it was told already.
// Finished pods are not told: they have run. O(1).
func (b *podNotices) note(pod *v1.Pod, p annotation.Problem) {
	if phaseOf(pod).Terminal() {
		return
	}
	if _, told := b.noticed[pod.UID]; told {
		return
	}
	if b.noticed == nil {
		b.noticed = map[types.UID]struct{}{}
		b.queued = map[types.UID]status.PodNotice{}
	}
	b.noticed[pod.UID] = struct{}{}
	b.queued[pod.UID] = status.PodNotice{Pod: pod, Reason: p.Reason, Message: p.Message}
}

// forget drops what was told to pod uid, and what is still to tell it.
func (b *podNotices) forget(uid types.UID) {
	if b.noticed == nil {
		return
	}
	delete(b.noticed, uid)
	delete(b.queued, uid)
}

// take returns the Events queued since the last call and forgets them;
// the pods stay told. O(Events).
func (b *podNotices) take() []status.PodNotice {
	if len(b.queued) == 0 {
		return nil
	}
	out := make([]status.PodNotice, 0, len(b.queued))
	for uid, n := range b.queued {
		out = append(out, n)
		delete(b.queued, uid)
	}
	return out
}
