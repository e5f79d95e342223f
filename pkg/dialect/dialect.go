// Package dialect is the contract between Caldera's cache and the adapters
// of the gang APIs it reads, one package per dialect below this one
// (schedplugins, volcano, upstream). An adapter watches its API and hands
// the cache each object as Caldera's group spec (pkg/groupspec) or queue;
// the cache never sees a dialect's types. The command builds the adapters
// and hands them to the cache, so nothing here is global.
package dialect

import (
	"context"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// HoldPlacementAnnotation marks a dialect's queue, read as a Caldera
// Queue, that places nothing new while it is not open, not even members
// of groups it admitted before (Volcano allocates only in Open queues);
// a Caldera Queue that is Closed stops admission only. Set by adapters on
// the model, never on an API object.
const HoldPlacementAnnotation = qapi.GroupName + "/hold-placement"

// Sink takes what adapters read; the cache implements it. Each call may
// come from an informer's goroutine.
type Sink interface {
	// SetGroup takes the spec of a group's object, added or updated.
	SetGroup(logger klog.Logger, s *groupspec.Spec)
	// UpdateGroup takes an update from old to s: a replaced object (its
	// uid changed, as a relist delivers one deleted and created again) is
	// old's deletion followed by s's addition.
	UpdateGroup(logger klog.Logger, old, s *groupspec.Spec)
	// DeleteGroup takes the deletion of a group's object.
	DeleteGroup(logger klog.Logger, s *groupspec.Spec)
	// Admitting reports whether a profile admits through queues: a
	// dialect's queues matter only then.
	Admitting() bool
	// SetQueue takes a queue of the dialect read as a Caldera Queue, its
	// apiVersion the dialect's (a Caldera Queue of the same name wins);
	// deleted when it went away.
	SetQueue(q *qapi.Queue, deleted bool)
}

// SetUp adds a step to the feed's start (pkg/feed), in which an adapter
// starts its informers and waits for their first lists; it fails once the
// feed has started.
type SetUp func(what string, step func(ctx context.Context, logger klog.Logger) error) error

// Adapter reads one dialect's API into a Sink.
type Adapter interface {
	// Watch sets up the adapter's informers to feed sink when the API
	// server serves its API. It starts nothing itself: the steps it adds
	// with setUp do, when the feed starts.
	Watch(ctx context.Context, h fwk.Handle, cfg *rest.Config, sink Sink, setUp SetUp) error
	// On reports whether Watch found the API served.
	On() bool
}

// ObjectOf is obj as a T, unwrapping the final state an informer hands a
// deletion it missed.
func ObjectOf[T any](obj any) (T, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// Deliver hands sink one informer event read as specs: a deletion of s, an
// update from old to s, or (old nil) an addition.
func Deliver(sink Sink, logger klog.Logger, old, s *groupspec.Spec, deleted bool) {
	switch {
	case deleted:
		sink.DeleteGroup(logger, s)
	case old != nil:
		sink.UpdateGroup(logger, old, s)
	default:
		sink.SetGroup(logger, s)
	}
}
