// Package noderoom keeps what every node has free for admission's placement
// check, and lays it out for one admission pass. Rooms is kept by events, in
// O(1) each: a node's allocatable, what the bound pods on it request, in
// all and per queue, and whether a taint limits who may use it. Pass is a
// pass's dense working copy of that room (placement.Room: node i's free
// amount of resource j), with a stable node order, and the nodes each pod
// may use by its node selector, required node affinity and tolerations.
//
// It knows nothing of gangs, units or queues' policy: the cache feeds it
// and builds the classes admission places on it. Neither type is safe for
// concurrent use; its owner guards it (the cache's lock).
package noderoom

import (
	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Node is one node as admission's placement check sees it. Read only
// outside this package.
type Node struct {
	// Obj is the Node object from the scheduler's informer; nil while only
	// pods name the node (their event came first).
	Obj *v1.Node
	// Alloc is the node's allocatable.
	Alloc resources.List
	// Used is what bound pods on the node request, Caldera's or not.
	Used resources.List
	// ByQueue is what bound pods of Caldera's queues request, per queue:
	// the room a reclaim or preemption plan could free on the node. A
	// queue's entry stays when it drops to zero, so that a bind and an
	// unbind allocate nothing; the node's deletion drops them.
	ByQueue map[string]resources.List
	// Tainted: the node has a NoSchedule or NoExecute taint, or is
	// unschedulable, so only some pods may use it.
	Tainted bool
}

// Rooms is every node's Node, kept by node and pod events.
type Rooms struct {
	nodes map[string]*Node
	// tainted counts the nodes with Node.Tainted: while 0, a pod without a
	// node selector or required affinity may use every node, and its
	// eligibility is not computed at all.
	tainted int
	// changed: a node was added or deleted since a Pass last ordered the
	// node names.
	changed bool
}

// Node returns the named node's room, nil when nothing is known of it.
func (r *Rooms) Node(name string) *Node { return r.nodes[name] }

// Tainted reports whether some node has a taint that limits who may use it.
func (r *Rooms) Tainted() bool { return r.tainted > 0 }

func (r *Rooms) node(name string) *Node {
	if r.nodes == nil {
		r.nodes = map[string]*Node{}
	}
	n := r.nodes[name]
	if n == nil {
		n = &Node{Used: resources.List{}}
		r.nodes[name] = n
	}
	return n
}

// SetNode records a node added or updated: its allocatable and taints.
func (r *Rooms) SetNode(obj *v1.Node, alloc resources.List) {
	n := r.node(obj.Name)
	if n.Obj == nil {
		r.changed = true
	}
	if n.Tainted {
		r.tainted--
	}
	n.Obj, n.Alloc = obj, alloc
	n.Tainted = obj.Spec.Unschedulable
	for _, t := range obj.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
			n.Tainted = true
		}
	}
	if n.Tainted {
		r.tainted++
	}
}

// DeleteNode forgets a node; what pods still name it stays counted until
// they go (they are deleted with it).
func (r *Rooms) DeleteNode(name string) {
	n := r.nodes[name]
	if n == nil {
		return
	}
	if n.Tainted {
		r.tainted--
	}
	r.changed = r.changed || n.Obj != nil
	n.Obj, n.Alloc, n.Tainted = nil, nil, false
	if n.Used.IsZero() {
		clear(n.ByQueue)
		delete(r.nodes, name)
	}
}

// Bind adds (sign 1) or subtracts (-1) a bound pod's request on its node,
// and in the node's per-queue amounts when queue is not "".
func (r *Rooms) Bind(node, queue string, req resources.List, sign int) {
	if node == "" {
		return
	}
	n := r.node(node)
	if sign > 0 {
		n.Used.Add(req)
	} else {
		n.Used.Sub(req)
	}
	if queue != "" {
		if n.ByQueue == nil {
			n.ByQueue = map[string]resources.List{}
		}
		if sign > 0 {
			n.ByQueue[queue] = n.ByQueue[queue].Add(req)
		} else {
			n.ByQueue[queue] = n.ByQueue[queue].Sub(req)
		}
	}
	if n.Obj == nil && n.Used.IsZero() {
		delete(r.nodes, node)
	}
}

// Requeue moves a bound pod's request on node from queue from to queue to
// (its admission unit moved).
func (r *Rooms) Requeue(node, from, to string, req resources.List) {
	n := r.nodes[node]
	if n == nil || node == "" || from == to {
		return
	}
	if from != "" {
		n.ByQueue[from] = n.ByQueue[from].Sub(req)
	}
	if to != "" {
		if n.ByQueue == nil {
			n.ByQueue = map[string]resources.List{}
		}
		n.ByQueue[to] = n.ByQueue[to].Add(req)
	}
}
