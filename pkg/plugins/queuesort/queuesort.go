// Package queuesort is the CalderaQueueSort plugin: the active queue's order.
package queuesort

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaQueueSort"

// QueueSort orders pods by their queue's priority, then their queue's share
// (lower first: the queue furthest below its deserved share), then group
// priority, group creation time, group key and pod name. Shares move while pods
// sit in the heap, so the queue part of the order is approximate: it is read
// when the heap compares, not re-sorted when a share changes. Members of one gang share the first three, so they sit
// next to each other in the heap and are scheduled back to back, which keeps
// two gangs from each holding half of what both need.
//
// Pods of plain profiles (profiles that built only this plugin, such as a
// default-scheduler profile beside Caldera's: kube-scheduler runs one queue
// sort for all profiles) are ordered among themselves exactly as upstream's
// PrioritySort orders them: priority, then the time they entered the queue.
// Against Caldera's pods a plain pod counts as a priority-0 queue that holds
// nothing, placed before Caldera's pods of an equal queue priority and
// share. Every pod thus has one key, and Less stays a strict weak order.
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
	if ia.Plain && ib.Plain {
		// PrioritySort.Less, to the tie: a and b are upstream's
		// QueuedPodInfo, whose priority is the pod's.
		return ia.Priority > ib.Priority ||
			(ia.Priority == ib.Priority && a.GetTimestamp().Before(b.GetTimestamp()))
	}
	// A plain pod's queue priority and share are zero (SortInfo).
	if ia.QueuePriority != ib.QueuePriority {
		return ia.QueuePriority > ib.QueuePriority
	}
	if ia.QueueShare != ib.QueueShare {
		return ia.QueueShare < ib.QueueShare
	}
	if ia.Plain != ib.Plain {
		return ia.Plain
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
