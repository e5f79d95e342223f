package cache

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// ReclaimInput fills what the cache knows for reclaim.Decide: the preemptor
// (pod's group, queue, priority and the requests of the members that still
// need a node, pod first), the running pods (each tagged with its group and
// queue) and the queues and victim gangs they belong to. running are the pods
// on the nodes, from the scheduler's snapshot; the queues' allocated amounts
// are summed from them too, so that victims and amounts agree whatever order
// the informers' handlers ran in. Pods that are leaving (terminating, or
// being evicted already) are neither victims nor counted, so evictions under
// way are not repeated. Nodes and Options are the caller's. It returns false
// with the reason when pod may not preempt: queues are off, or its group is
// not admitted. Cost: O(running + queues), under the read lock; it runs in
// PostFilter, not on a hot path.
func (c *Cache) ReclaimInput(pod *v1.Pod, running []*v1.Pod, leaving func(*v1.Pod) bool) (reclaim.Input, bool, string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a := c.adm
	if !a.on() {
		return reclaim.Input{}, false, "queue admission (CalderaEnqueue) is not enabled"
	}
	b := reclaimInput{a: a, in: reclaim.Input{Queues: map[string]reclaim.Queue{}, Groups: map[string]reclaim.Group{}}, groupIDs: groupIDMemo{}}
	pre, ok, why := a.preemptorLocked(c.groups, pod)
	if !ok {
		return b.in, false, why
	}
	b.in.Preemptor = pre
	b.in.Deficits = c.adm.reclaimDeficitsLocked(c.adm.preemptorUnitLocked(pod))
	b.queue(pre.Queue)
	b.addPods(running, leaving)
	return b.in, true, ""
}

// reclaimInput builds a reclaim.Input under the cache's read lock.
type reclaimInput struct {
	a        *admissionState
	in       reclaim.Input
	groupIDs groupIDMemo
}

// queue returns the input's entry for queue name, adding it (its share,
// guarantee and reclaimability, nothing allocated yet) the first time.
func (b *reclaimInput) queue(name string) reclaim.Queue {
	q, ok := b.in.Queues[name]
	if !ok {
		q.Allocated = resources.List{}
		if b.a.shares != nil {
			q.Deserved = b.a.shares.Deserved(name)
		}
		if spec, ok := b.a.tree.Spec(name); ok {
			q.Guarantee, q.Reclaimable = spec.Guarantee, spec.Reclaimable
		}
		b.in.Queues[name] = q
	}
	return q
}

// addPods adds the running pods of Caldera's queues that are not leaving:
// each counts in its queue's allocated amount, and a bound one is a
// candidate victim, tagged with its group.
//
// Per running pod, the work is kept to the account's lookup: the pods' IDs
// are cut from one string rather than allocated one by one, the queue's
// allocated list is looked up again only when the queue changes from the
// previous pod's, and a gang is described once (at 5000 nodes W7's
// attempts spent ~8 ms here, a third on the IDs).
func (b *reclaimInput) addPods(running []*v1.Pod, leaving func(*v1.Pod) bool) {
	a := b.a
	b.in.Pods = make([]reclaim.Pod, 0, len(running))
	var ids strings.Builder
	size := 0
	for _, p := range running {
		size += len(p.Namespace) + 1 + len(p.Name)
	}
	ids.Grow(size)
	ends := make([]int, 0, len(running))
	lastQueue, lastAlloc := "", resources.List(nil)
	var last groupOfPods
	for _, p := range running {
		acct := a.pods[p.UID]
		if acct == nil || acct.queue == "" || p.DeletionTimestamp != nil || leaving(p) {
			continue // not Caldera's, or on its way out
		}
		if lastAlloc == nil || acct.queue != lastQueue {
			lastQueue, lastAlloc = acct.queue, b.queue(acct.queue).Allocated
		}
		lastAlloc.Add(acct.req)
		if !acct.bound {
			continue // assumed, still binding: holds room, never a victim
		}
		ids.WriteString(p.Namespace)
		ids.WriteByte('/')
		ids.WriteString(p.Name)
		ends = append(ends, ids.Len())
		rp := reclaim.Pod{
			Node: p.Spec.NodeName, Queue: acct.queue,
			Priority: gangbook.PodPriority(p), Started: startedAt(p), Request: acct.req,
		}
		b.describe(&last, acct.unit)
		if last.unit != nil {
			rp.Priority, rp.Group = last.unit.priority, last.group
		}
		b.in.Pods = append(b.in.Pods, rp)
	}
	all, start := ids.String(), 0
	for i, end := range ends {
		b.in.Pods[i].ID, start = all[start:end], end
	}
}

// groupOfPods is the unit of the previous pod addPods saw, and its group's
// id ("" for none).
type groupOfPods struct {
	set   bool
	key   queue.Key
	unit  *unit
	group string
}

// describe moves last to the unit of key when it is another, adding that
// unit's gang to the input's groups the first time it is seen.
func (b *reclaimInput) describe(last *groupOfPods, key queue.Key) {
	if last.set && key == last.key {
		return
	}
	*last = groupOfPods{set: true, key: key, unit: b.a.units[key]}
	if u := last.unit; u != nil && u.gang != nil {
		var seen bool
		if last.group, seen = b.groupIDs.of(u.key); !seen {
			b.in.Groups[last.group] = reclaim.Group{MinMember: u.min, Whole: u.gang.Obj != nil && u.gang.Obj.Rules.DisruptAll}
		}
	}
}

// preemptorUnitLocked is pod's admission unit: its gang's, or its own.
func (a *admissionState) preemptorUnitLocked(pod *v1.Pod) *unit {
	if key, ok := gangbook.GroupKeyOf(pod); ok {
		return a.units[gangUnitKey(key)]
	}
	return a.units[podUnitKey(pod)]
}

// preemptorLocked describes pod's group, one of groups, as a preemptor.
func (a *admissionState) preemptorLocked(groups map[gangbook.GroupKey]*gangbook.Group, pod *v1.Pod) (reclaim.Preemptor, bool, string) {
	first := convert.PodRequest(pod)
	key, labelled := gangbook.GroupKeyOf(pod)
	if !labelled {
		u := a.units[podUnitKey(pod)]
		if u == nil {
			if a.opts.AdmitSingletons {
				return reclaim.Preemptor{}, false, "the pod is not known to its queue yet"
			}
			// Singletons bypass queues: they may only preempt within the
			// queue they would resolve to.
			q, _ := a.resolveQueueLocked("", pod, pod.Namespace)
			return reclaim.Preemptor{Queue: q, Priority: gangbook.PodPriority(pod), Members: []resources.List{first}}, true, ""
		}
		if !u.admitted {
			return reclaim.Preemptor{}, false, "the pod is not admitted to queue " + u.queue
		}
		return reclaim.Preemptor{Queue: u.queue, Priority: u.priority, Members: []resources.List{first}}, true, ""
	}
	uk := gangUnitKey(key)
	u, g := a.units[uk], groups[key]
	if u == nil || g == nil {
		return reclaim.Preemptor{}, false, "the pod's PodGroup is not known yet"
	}
	if !u.admitted {
		return reclaim.Preemptor{}, false, "the PodGroup is not admitted to queue " + u.queue
	}
	pre := reclaim.Preemptor{Group: uk.String(), Queue: u.queue, Priority: u.priority,
		Members: []resources.List{first}, MemberIDs: []string{string(pod.UID)}}
	// The gang needs minMember members placed; the pod is one, the rest
	// come from its siblings that hold no node (reclaim.PickSiblings picks
	// which count). Siblings bound, or reserved and waiting in Permit, are
	// on their nodes in the scheduler's snapshot already: counted again as
	// members to place, their room would be asked for twice.
	if need := int(u.min) - g.Counts.Placed - 1; need > 0 {
		var rest []resources.List
		var uids []types.UID
		for uid, m := range g.Members {
			if uid != pod.UID && m.Node() == "" && !m.State.Phase.Terminal() {
				rest = append(rest, m.Request)
				uids = append(uids, uid)
			}
		}
		for _, i := range reclaim.PickSiblings(rest, need) {
			pre.Members = append(pre.Members, rest[i])
			pre.MemberIDs = append(pre.MemberIDs, string(uids[i]))
		}
	}
	return pre, true, ""
}

// startedAt is when a pod began to hold its node: its start time, else when
// it was scheduled, else when it was created.
func startedAt(p *v1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// groupIDMemo renders unit keys as reclaim's group ids (strings: pkg/reclaim
// names groups opaquely), once per gang per decision rather than per pod.
type groupIDMemo map[queue.Key]string

// seen: the key was rendered before.
func (m groupIDMemo) of(k queue.Key) (id string, seen bool) {
	id, seen = m[k]
	if !seen {
		id = k.String()
		m[k] = id
	}
	return id, seen
}
