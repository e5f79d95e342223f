// Package queuesort is the CalderaQueueSort plugin: the active queue's order.
package queuesort

import (
	"context"

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
type QueueSort struct {
	cache *cache.Cache
}

var _ fwk.QueueSortPlugin = &QueueSort{}

// New builds the plugin; every profile shares the cache of p.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	c, err := p.Get(ctx, h)
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
