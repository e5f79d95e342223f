// Package binder is the CalderaBinder plugin: kube-scheduler's DefaultBinder
// with a bound on the binding calls in flight. When a gang is allowed, every
// member waiting in Permit starts its binding cycle at once; a 2000-member
// gang then sends 2000 binding requests together. kube-apiserver serves 100
// concurrent streams per HTTP/2 connection by default, and Go's HTTP client
// dials a new TLS connection for each request beyond that, so the release
// cost a TLS handshake per member on both ends.
// Queued here instead, the binds share the open connections.
package binder

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaBinder"

// Binder binds pods as DefaultBinder does, at most MaxConcurrentBinds at once.
type Binder struct {
	bind  fwk.BindPlugin
	slots cache.Slots
}

var _ fwk.BindPlugin = &Binder{}

// New builds the plugin for one profile; every profile shares the slots of
// p's cache.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	var a Args
	if err := args.Load(Name, obj, &a); err != nil {
		return nil, err
	}
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	slots, err := c.BindSlots(int(*a.MaxConcurrentBinds))
	if err != nil {
		return nil, fmt.Errorf("%s args: maxConcurrentBinds: %w", Name, err)
	}
	def, err := defaultbinder.New(ctx, nil, h)
	if err != nil {
		return nil, err
	}
	return &Binder{bind: def.(fwk.BindPlugin), slots: slots}, nil
}

// Name returns the plugin name.
func (b *Binder) Name() string { return Name }

// Bind waits for a free slot, then binds as DefaultBinder does. A pod whose
// binding cycle ends while it waits (the scheduler stops) is not bound.
func (b *Binder) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if !b.slots.TryAcquire() {
		klog.FromContext(ctx).V(5).Info("Waiting for a binding slot", "pod", klog.KObj(pod), "node", nodeName)
		if err := b.slots.Acquire(ctx); err != nil {
			return fwk.AsStatus(fmt.Errorf("waiting to bind %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	defer b.slots.Release()
	return b.bind.Bind(ctx, state, pod, nodeName)
}
