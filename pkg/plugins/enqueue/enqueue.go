// Package enqueue is the CalderaEnqueue plugin: queue admission, Volcano's
// enqueue action inside kube-scheduler. A group's pods stay out of the active
// queue until an admission pass admits the group into its queue; the rules
// live in pkg/queue and the state in pkg/cache.
package enqueue

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaEnqueue"

// Enqueue gates pods until their group is admitted.
type Enqueue struct {
	cache admissions
}

// admissions is what the plugin reads from the shared cache (*cache.Cache);
// the plugin's tests give it a fake.
type admissions interface {
	// MayEnqueue says whether the pod may enter the scheduling queue: its
	// group is admitted to its queue, or refused only for want of room
	// (a cycle then marks it Unschedulable, for cluster autoscalers); and
	// when not, which admission check holds it.
	MayEnqueue(pod *v1.Pod) (ok bool, msg string)
}

var _ admissions = (*cache.Cache)(nil)

var (
	_ fwk.PreEnqueuePlugin  = &Enqueue{}
	_ fwk.EnqueueExtensions = &Enqueue{}
)

// New builds the plugin for one profile; every profile shares the cache of p.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	var a Args
	if err := args.Load(Name, obj, &a); err != nil {
		return nil, err
	}
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	if err := p.EnableAdmission(h.ProfileName(), a.Options()); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Enqueue{cache: c}, nil
}

// Name returns the plugin name.
func (e *Enqueue) Name() string { return Name }

// PreEnqueue keeps a pod out of the active queue until its group is admitted;
// the status says which admission check failed.
func (e *Enqueue) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if ok, msg := e.cache.MayEnqueue(pod); !ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	}
	return nil
}

// EventsToRegister: admission activates admitted pods itself (the pass runs
// on the events that can change a decision), so the only event that can
// ungate a pod without a pass is the pod's own update, e.g. a new queue label.
func (e *Enqueue) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodLabel}, QueueingHintFn: selfUpdate},
	}, nil
}

func selfUpdate(_ klog.Logger, pod *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	if p, ok := newObj.(*v1.Pod); ok && p.UID == pod.UID {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
