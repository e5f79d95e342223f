package cache

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Admitting implements status.Source and dialect.Sink: whether a profile
// admits through queues.
func (c *Cache) Admitting() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.On()
}

// AdmissionWrites implements status.Source. It first queues a NotAdmitted
// Event for every pending group whose verdict changed (noticePendingLocked),
// which runs on the status leader's period, then hands out what is queued.
func (c *Cache) AdmissionWrites() []status.Admission {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.adm.On() {
		return nil
	}
	c.adm.NoticePendingLocked(time.Now(), c.dirty)
	return c.adm.TakeAdmissionWritesLocked()
}

// QueueStatusUpdates implements status.Source: the Queues whose status
// differs from what the informer last delivered, with the status to write.
func (c *Cache) QueueStatusUpdates() []*qapi.Queue {
	c.mu.RLock()
	if !c.adm.On() {
		c.mu.RUnlock()
		return nil
	}
	a := c.adm
	figs := a.QueueFiguresLocked()
	var want []*qapi.Queue
	names := make([]string, 0, len(a.Queues))
	for name := range a.Queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		q := a.Queues[name]
		st := q.Status.DeepCopy()
		n := a.QueueCountsLocked(name)
		st.Pending, st.Admitted, st.Running, st.Completed = n.Pending, n.Admitted, n.Running, n.Completed
		st.Head = queuedGroups(a.Pending.Head(name, QueueHeadLength))
		// A queue's allocated counts its descendants' (see QueueStatus.Allocated).
		f := figs[name]
		st.Allocated = convert.ResourceList(f.Allocated)
		share := f.Share
		if f.Divided {
			st.Deserved = convert.ResourceList(f.Deserved)
			st.Share = queue.FormatShare(share)
		}
		setCondition(&st.Conditions, q.Generation, qapi.QueueConditionInvalidParent, a.Tree.Problem(name))
		over := metav1.Condition{Type: qapi.QueueConditionOverDeserved, Status: metav1.ConditionFalse, Reason: qapi.ReasonWithinDeserved, Message: "allocated is within the deserved share"}
		if share > 1 {
			over.Status, over.Reason, over.Message = metav1.ConditionTrue, qapi.ReasonAboveDeserved, "allocated exceeds the deserved share "+st.Share
		}
		putCondition(&st.Conditions, q.Generation, over)
		if !statusEqual(&q.Status, st) {
			cp := q.DeepCopy()
			cp.Status = *st
			want = append(want, cp)
		}
	}
	c.mu.RUnlock()
	return want
}

// QueueHeadLength is how many of a queue's first waiting groups its status
// lists (QueueStatus.Head): enough for the jobs near the front to see their
// position, few enough that a long queue does not grow the Queue object or
// rewrite it on every change far behind.
const QueueHeadLength = 20

// queuedGroups renders unit keys as the Queue status lists them.
func queuedGroups(keys []queue.Key) []qapi.QueuedGroup {
	if len(keys) == 0 {
		return nil
	}
	out := make([]qapi.QueuedGroup, len(keys))
	for i, k := range keys {
		kind := "PodGroup"
		if k.Kind == queue.KindPod {
			kind = "Pod"
		}
		out[i] = qapi.QueuedGroup{Kind: kind, Namespace: k.Namespace, Name: k.Name}
	}
	return out
}

func setCondition(conds *[]metav1.Condition, gen int64, typ string, p *queue.Problem) {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: qapi.ReasonParentValid, Message: "the queue's parent chain reaches the root"}
	if p != nil {
		c.Status, c.Message = metav1.ConditionTrue, p.Message
		c.Reason = qapi.ReasonParentNotFound
		if p.Kind == queue.ProblemCycle {
			c.Reason = qapi.ReasonParentCycle
		}
	}
	putCondition(conds, gen, c)
}

func putCondition(conds *[]metav1.Condition, gen int64, c metav1.Condition) {
	c.ObservedGeneration = gen
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == gen {
			return
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.Now()
		}
		*old = c
		return
	}
	c.LastTransitionTime = metav1.Now()
	*conds = append(*conds, c)
}

func statusEqual(a, b *qapi.QueueStatus) bool {
	if a.Share != b.Share || a.Pending != b.Pending || a.Admitted != b.Admitted || a.Running != b.Running || a.Completed != b.Completed {
		return false
	}
	if !convert.Resources(a.Allocated).Equal(convert.Resources(b.Allocated)) || !convert.Resources(a.Deserved).Equal(convert.Resources(b.Deserved)) {
		return false
	}
	if !slices.Equal(a.Head, b.Head) {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// Nominations implements status.Source: the nominations handed out to be
// cleared, each method under the cache's lock.
func (c *Cache) Nominations() status.Nominations { return nominations{c: c} }

// nominations is Cache.Nominations: the methods the status writer calls,
// each taking the cache's lock around the admission side's own.
type nominations struct{ c *Cache }

// Stale reports whether pod, handed out, still names a node while its
// unit is not admitted.
func (n nominations) Stale(pod *v1.Pod) bool {
	n.c.mu.RLock()
	defer n.c.mu.RUnlock()
	return n.c.adm.NominationStale(pod)
}

// Settled forgets that uid was handed out, so that a later period may
// hand it out again.
func (n nominations) Settled(uid types.UID) {
	n.c.mu.Lock()
	delete(n.c.adm.Clearing, uid)
	n.c.mu.Unlock()
}

// NodeNames implements status.Source.
func (c *Cache) NodeNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nodes := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		nodes = append(nodes, n)
	}
	return nodes
}

// Gated implements status.Source: those of nominated that are unbound and
// whose unit is not admitted. O(len(nominated)).
func (c *Cache) Gated(nominated []*v1.Pod) []*v1.Pod {
	var drop []*v1.Pod
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.adm.On() {
		return nil
	}
	for _, p := range nominated {
		acct := c.adm.Pods[p.UID]
		if acct == nil || acct.Bound {
			continue
		}
		if u := c.adm.Units[acct.Unit]; u != nil && !u.Admitted {
			drop = append(drop, p)
		}
	}
	return drop
}
