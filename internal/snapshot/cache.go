package snapshot

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/status"
)

// CacheOptions say how StartCache sets the cache up: what the scheduler's
// plugins would have set up from their args.
type CacheOptions struct {
	// Name names the handle's profile and the logger.
	Name string
	// Admission, when set, turns queue admission on for Profiles
	// (CalderaEnqueue's args).
	Admission *admission.Options
	// Profiles are the scheduler profiles whose pods Caldera admits.
	Profiles []string
	// Reclaim and Preempt are CalderaReclaim's eviction actions, which the
	// admission pass counts as room a plan can free.
	Reclaim, Preempt bool
	// SyncTimeout bounds the wait for every object to be delivered.
	SyncTimeout time.Duration
}

// StartCache builds Caldera's cache on cfg (a snapshot Server or a live
// API server) as the command does, with no scheduler around it: the same
// informers, including the scheduler's own informer factory (so pods are
// selected as the scheduler selects them), started, and waited for until
// every listed object is delivered. It starts no admission loop and no
// status writer: the caller runs passes. ctx ends the informers.
func StartCache(ctx context.Context, cfg *rest.Config, o CacheOptions) (*cache.Cache, error) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(o.Name))
	cfg = rest.CopyConfig(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := scheduler.NewInformerFactory(cs, 0, nil)
	h := Handle(o.Name, cfg, cs, factory)
	p := cache.NewProvider(status.AlwaysLeading())
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	// What the scheduler's plugins would hand the Provider; feed.Wire
	// applies it.
	if o.Admission != nil {
		for _, prof := range o.Profiles {
			if err := p.EnableAdmission(prof, *o.Admission); err != nil {
				return nil, err
			}
		}
	}
	if err := p.EnableEvictions(o.Name, o.Reclaim, o.Preempt); err != nil {
		return nil, err
	}
	f, err := feed.Wire(ctx, h, p, schedplugins.NewReader(), volcano.NewReader(), upstream.NewReader())
	if err != nil {
		return nil, err
	}
	if err := f.Start(ctx); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	timeout := o.SyncTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer of %v did not sync", typ)
		}
	}
	if !f.WaitForMembers(syncCtx) {
		return nil, fmt.Errorf("gang members were not listed within %v", timeout)
	}
	// A store counts as synced before its handlers have seen the list: a
	// pass run now could see no nodes.
	for _, done := range f.HandlersSynced() {
		if !clientcache.WaitFor(syncCtx, "", done) {
			return nil, fmt.Errorf("the cache's handlers (%s) were not handed the lists within %v", done.Name(), timeout)
		}
	}
	return c, nil
}
