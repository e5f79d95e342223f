package cache

import (
	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// nodeRoom is one node as admission's placement check (CheckPlacement) sees
// it: its allocatable and what the bound, unfinished pods on it request, in
// all and per queue. Kept by events, O(1) each, so a pass never scans pods.
type nodeRoom struct {
	// node is the Node object from the scheduler's informer (read only);
	// nil while only pods name the node (their event came first).
	node  *v1.Node
	alloc resources.List
	// used is what bound pods on the node request, Caldera's or not.
	used resources.List
	// byQueue is what bound pods of Caldera's queues request, per queue:
	// the room a reclaim or preemption plan could free on the node.
	byQueue map[string]resources.List
	// tainted: the node has a NoSchedule or NoExecute taint, or is
	// unschedulable, so only some pods may use it.
	tainted bool
}

// feasibleState is the cache's side of the placement check, guarded by
// Cache.mu.
type feasibleState struct {
	rooms map[string]*nodeRoom
	// tainted counts the nodes with nodeRoom.tainted: while 0, a pod
	// without a node selector or required affinity may use every node,
	// and its eligibility is not computed at all.
	tainted int
	// inflight holds the admitted units that still reserve room (their
	// inflight is not empty): their unbound members are placed first in
	// every pass, so new admissions do not count their room as free.
	inflight map[queue.Key]*unit
	// reservations are the starving heads' reserved nodes (Reserve),
	// renewed by each pass that finds them still starving.
	reservations map[queue.Key]*reservation
	pass         passPlacement
	// memos keep pending gangs' placement classes between passes.
	memos map[queue.Key]*classMemo
	// nodesChanged: a node was added or deleted since the pass last sorted
	// the node names.
	nodesChanged bool
}

// reservation is the nodes held for one starving group and the pass that
// last renewed them.
type reservation struct {
	nodes []string
	gen   uint64
}

func (f *feasibleState) room(name string) *nodeRoom {
	if f.rooms == nil {
		f.rooms = map[string]*nodeRoom{}
	}
	r := f.rooms[name]
	if r == nil {
		r = &nodeRoom{used: resources.List{}}
		f.rooms[name] = r
	}
	return r
}

// setNode records a node's allocatable, labels and taints.
func (f *feasibleState) setNode(n *v1.Node, alloc resources.List) {
	r := f.room(n.Name)
	if r.node == nil {
		f.nodesChanged = true
	}
	if r.tainted {
		f.tainted--
	}
	r.node, r.alloc = n, alloc
	r.tainted = n.Spec.Unschedulable
	for _, t := range n.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
			r.tainted = true
		}
	}
	if r.tainted {
		f.tainted++
	}
}

// deleteNode forgets a node; what pods still name it stays counted until
// they go (they are deleted with it).
func (f *feasibleState) deleteNode(name string) {
	r := f.rooms[name]
	if r == nil {
		return
	}
	if r.tainted {
		f.tainted--
	}
	f.nodesChanged = f.nodesChanged || r.node != nil
	r.node, r.alloc, r.tainted = nil, nil, false
	if r.used.IsZero() {
		clear(r.byQueue)
		delete(f.rooms, name)
	}
}

// bind adds (sign 1) or subtracts (-1) a bound pod's request on its node,
// and in the node's per-queue amounts when queue is not "".
func (f *feasibleState) bind(node, queue string, req resources.List, sign int) {
	if node == "" {
		return
	}
	r := f.room(node)
	if sign > 0 {
		r.used.Add(req)
	} else {
		r.used.Sub(req)
	}
	if queue != "" {
		// A queue's entry stays when it drops to zero: a bind and an
		// unbind then allocate nothing (one entry per node and queue that
		// ever had a pod there; the node's deletion drops them).
		if r.byQueue == nil {
			r.byQueue = map[string]resources.List{}
		}
		if sign > 0 {
			r.byQueue[queue] = r.byQueue[queue].Add(req)
		} else {
			r.byQueue[queue] = r.byQueue[queue].Sub(req)
		}
	}
	if r.node == nil && r.used.IsZero() {
		delete(f.rooms, node)
	}
}

// requeue moves a bound pod's request on node from queue from to queue to
// (its unit moved).
func (f *feasibleState) requeue(node, from, to string, req resources.List) {
	r := f.rooms[node]
	if r == nil || node == "" || from == to {
		return
	}
	if from != "" {
		r.byQueue[from] = r.byQueue[from].Sub(req)
	}
	if to != "" {
		if r.byQueue == nil {
			r.byQueue = map[string]resources.List{}
		}
		r.byQueue[to] = r.byQueue[to].Add(req)
	}
}

// track keeps feasibleState.inflight in step with u.inflight.
func (f *feasibleState) track(u *unit, gone bool) {
	if gone {
		delete(f.memos, u.key)
	}
	if len(u.inflight) == 0 || gone {
		delete(f.inflight, u.key)
		return
	}
	if f.inflight == nil {
		f.inflight = map[queue.Key]*unit{}
	}
	f.inflight[u.key] = u
}
