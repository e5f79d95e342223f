// Package queuesort is the CalderaQueueSort plugin: the active queue's order.
package queuesort

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	schedulingapi "k8s.io/kubernetes/pkg/apis/scheduling"

	"github.com/caldera-sched/caldera/pkg/cache"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaQueueSort"

// SystemPriority is the lowest priority of the system class: the
// system-cluster-critical priority class (2000000000) and everything above
// it, system-node-critical (2000001000) included. It is upstream's
// SystemCriticalPriority, the bound the kubelet calls critical.
const SystemPriority = schedulingapi.SystemCriticalPriority

// QueueSort orders the one scheduling queue kube-scheduler runs for all
// profiles. Every pod falls in one of three classes, always in this order:
//
//  1. system: pods whose priority is SystemPriority or above, of any
//     profile (a gang member's priority is its gang's, so a gang with a
//     system-priority member is in this class whole and stays adjacent);
//     by priority (higher first), then a plain profile's pod before
//     Caldera's, then within each kind by the rule of 2 or 3;
//  2. plain: pods of plain profiles (profiles that built only this plugin,
//     such as the default-scheduler profile beside Caldera's) below
//     SystemPriority, exactly as upstream's PrioritySort orders them:
//     priority, then the time they entered the queue;
//  3. batch: Caldera's pods below SystemPriority, by their queue's priority,
//     then their queue's share (lower first: the queue furthest below its
//     deserved share), then group priority, group creation time, group key
//     and pod name.
//
// Why classes: a shared cluster's DaemonSet and control-plane pods, and the
// default profile's services, must never wait behind a batch backlog, and a
// single key cannot both keep Caldera's queue-first order among batch pods
// and compare plain pods with batch pods by pod priority: with batch pod A
// (queue priority 10, priority 0), batch pod B (queue priority 0, priority
// 100) and plain pod X (priority 50), A<B by queue, B<X and X<A by priority,
// a cycle the heap cannot sort. A fixed order between classes, with one rule
// inside each, is a lexicographic key and so a strict weak order. Two plain
// pods still compare exactly as PrioritySort compares them across classes 1
// and 2 (the system class is the top of the priority order), and two batch
// pods below SystemPriority exactly as before.
//
// Shares move while pods sit in the heap, so the queue part of the order is
// approximate: it is read when the heap compares, not re-sorted when a share
// changes. Members of one gang share the first keys, so they sit next to each
// other in the heap and are scheduled back to back, which keeps two gangs from
// each holding half of what both need.
type QueueSort struct {
	cache sortSource
}

// sortSource is what Less reads of the cache: *cache.Cache, or a fake in
// tests. Calling it through the interface allocates nothing (SortInfo
// returns a value).
type sortSource interface {
	SortInfo(pod *v1.Pod) cache.SortInfo
}

var _ fwk.QueueSortPlugin = &QueueSort{}

// New builds the plugin; every profile shares the cache of p.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	// GetForQueueSort, not Get: building this plugin alone does not make a
	// profile Caldera's (see QueueSort).
	c, err := p.GetForQueueSort(ctx, h)
	if err != nil {
		return nil, err
	}
	return &QueueSort{cache: c}, nil
}

// Name returns the plugin name.
func (q *QueueSort) Name() string { return Name }

// podInfoGetter is implemented by the queue's pod entries; asserting to it
// allocates nothing.
type podInfoGetter interface {
	GetPodInfo() fwk.PodInfo
}

// class is a pod's class in QueueSort's order, lower first.
type class uint8

const (
	classSystem class = iota
	classPlain
	classBatch
)

// classOf is the class of a pod with key i. Priority is the pod's own for a
// plain pod and its group's for Caldera's (SortInfo).
func classOf(i cache.SortInfo) class {
	switch {
	case i.Priority >= SystemPriority:
		return classSystem
	case i.Plain:
		return classPlain
	}
	return classBatch
}

// Less reports whether a sorts before b. It allocates nothing: the group
// lookups use struct keys into the shared cache.
func (q *QueueSort) Less(a, b fwk.QueuedEntityInfo) bool {
	pa, okA := a.(podInfoGetter)
	pb, okB := b.(podInfoGetter)
	if !okA || !okB {
		// Upstream's own pod-group entities: fall back to priority, then age.
		return a.GetPriority() > b.GetPriority() ||
			(a.GetPriority() == b.GetPriority() && a.GetTimestamp().Before(b.GetTimestamp()))
	}
	podA, podB := pa.GetPodInfo().GetPod(), pb.GetPodInfo().GetPod()
	ia, ib := q.cache.SortInfo(podA), q.cache.SortInfo(podB)
	ca, cb := classOf(ia), classOf(ib)
	if ca != cb {
		return ca < cb
	}
	if ca == classSystem {
		// Node-critical before cluster-critical, whatever the profile; at
		// an equal priority the plain profile's pod first, so that neither
		// kind's own rule below is ever applied across kinds.
		if ia.Priority != ib.Priority {
			return ia.Priority > ib.Priority
		}
		if ia.Plain != ib.Plain {
			return ia.Plain
		}
	}
	if ia.Plain {
		// Both plain (the classes and the check above): PrioritySort.Less,
		// to the tie. a and b are upstream's QueuedPodInfo, whose priority
		// is the pod's.
		return ia.Priority > ib.Priority ||
			(ia.Priority == ib.Priority && a.GetTimestamp().Before(b.GetTimestamp()))
	}
	return batchLess(ia, ib, podA, podB)
}

// batchLess is Caldera's order between two of its own pods: queue priority,
// queue share, group priority, group creation time, group key, pod name.
func batchLess(ia, ib cache.SortInfo, podA, podB *v1.Pod) bool {
	if ia.QueuePriority != ib.QueuePriority {
		return ia.QueuePriority > ib.QueuePriority
	}
	if ia.QueueShare != ib.QueueShare {
		return ia.QueueShare < ib.QueueShare
	}
	if ia.Priority != ib.Priority {
		return ia.Priority > ib.Priority
	}
	if !ia.Created.Equal(ib.Created) {
		return ia.Created.Before(ib.Created)
	}
	if ia.Namespace != ib.Namespace {
		return ia.Namespace < ib.Namespace
	}
	if ia.Name != ib.Name {
		return ia.Name < ib.Name
	}
	if podA.Namespace != podB.Namespace {
		return podA.Namespace < podB.Namespace
	}
	return podA.Name < podB.Name
}
