package admission

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// ReclaimInputLocked fills what admission knows for reclaim.Decide: the preemptor
// (pod's group, queue, priority and the requests of the members that still
// need a node, pod first), the running pods (each tagged with its group and
// queue) and the queues and victim gangs they belong to. running are the pods
// on the nodes, from the scheduler's snapshot; the queues' allocated amounts
// are summed from them too, so that victims and amounts agree whatever order
// the informers' handlers ran in. Pods that are leaving (terminating, or
// being evicted already) are neither victims nor counted, so evictions under
// way are not repeated. Nodes and Options are the caller's. It returns false
// with the reason when pod may not preempt: queues are off, or its group is
// not admitted. groups are the cache's gangs. Cost: O(running + queues).
func (a *State) ReclaimInputLocked(groups map[gangbook.GroupKey]*gangbook.Group, pod *v1.Pod, running []*v1.Pod, leaving func(*v1.Pod) bool) (reclaim.Input, bool, string) {
	if !a.On() {
		return reclaim.Input{}, false, "queue admission (CalderaEnqueue) is not enabled"
	}
	b := reclaimInput{a: a, in: reclaim.Input{Queues: map[string]reclaim.Queue{}, Groups: map[string]reclaim.Group{}}, groupIDs: groupIDMemo{}}
	pre, ok, why := a.PreemptorLocked(groups, pod)
	if !ok {
		return b.in, false, why
	}
	b.in.Preemptor = pre
	b.in.Deficits = a.ReclaimDeficitsLocked(a.PreemptorUnitLocked(pod))
	b.queue(pre.Queue)
	b.addPods(running, leaving)
	return b.in, true, ""
}

// reclaimInput builds a reclaim.Input under the cache's read lock.
type reclaimInput struct {
	a        *State
	in       reclaim.Input
	groupIDs groupIDMemo
}

// queue returns the input's entry for queue name, adding it (its share,
// guarantee and reclaimability, nothing allocated yet) the first time.
func (b *reclaimInput) queue(name string) reclaim.Queue {
	q, ok := b.in.Queues[name]
	if !ok {
		q.Allocated = resources.List{}
		if b.a.Shares != nil {
			q.Deserved = b.a.Shares.Deserved(name)
		}
		if spec, ok := b.a.Tree.Spec(name); ok {
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
		acct := a.Pods[p.UID]
		if acct == nil || acct.Queue == "" || p.DeletionTimestamp != nil || leaving(p) {
			continue // not Caldera's, or on its way out
		}
		if lastAlloc == nil || acct.Queue != lastQueue {
			lastQueue, lastAlloc = acct.Queue, b.queue(acct.Queue).Allocated
		}
		lastAlloc.Add(acct.Req)
		if !acct.Bound {
			continue // assumed, still binding: holds room, never a victim
		}
		ids.WriteString(p.Namespace)
		ids.WriteByte('/')
		ids.WriteString(p.Name)
		ends = append(ends, ids.Len())
		rp := reclaim.Pod{
			Node: p.Spec.NodeName, Queue: acct.Queue,
			Priority: gangbook.PodPriority(p), Started: startedAt(p), Request: acct.Req,
		}
		b.describe(&last, acct.Unit)
		if last.unit != nil {
			rp.Priority, rp.Group = last.unit.Priority, last.group
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
	unit  *Unit
	group string
}

// describe moves last to the unit of key when it is another, adding that
// unit's gang to the input's groups the first time it is seen.
func (b *reclaimInput) describe(last *groupOfPods, key queue.Key) {
	if last.set && key == last.key {
		return
	}
	*last = groupOfPods{set: true, key: key, unit: b.a.Units[key]}
	if u := last.unit; u != nil && u.Gang != nil {
		var seen bool
		if last.group, seen = b.groupIDs.of(u.Key); !seen {
			b.in.Groups[last.group] = reclaim.Group{MinMember: u.Min, Whole: u.Gang.Obj != nil && u.Gang.Obj.Rules.DisruptAll}
		}
	}
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
