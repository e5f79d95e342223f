package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/plugins/enqueue"
	"github.com/caldera-sched/caldera/pkg/status"
)

// RecountCache starts a fresh Caldera cache, the "recount" of s's cache: built
// now from the objects the apiserver holds, with s's admission options for
// the profiles of s that run CalderaEnqueue, but without a scheduler. Its
// history-independent aggregates (see docs/reliability.md) must equal those of
// s's cache once both have seen the same objects.
//
// It reaches the apiserver through Env.Config, not through s's kubeconfig
// (which a test may have cut), with informers of its own, including a pod
// informer built like the scheduler's (scheduler.NewInformerFactory). It runs
// admission passes in memory but writes nothing: no status reconciler runs,
// and pods are never activated (no scheduling queue exists). The one write any
// cache may make is creating the default queue when it is missing. It stops
// when t ends.
func (s *Scheduler) RecountCache(t *testing.T) *cache.Cache {
	t.Helper()
	live := s.CalderaCache()
	if live == nil {
		t.Fatalf("RecountCache: the scheduler has no Caldera cache")
	}
	data, err := live.Dump()
	if err != nil {
		t.Fatal(err)
	}
	var d cache.CacheDump
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}

	var profiles []string
	if d.Options != nil {
		for _, prof := range s.Config.ComponentConfig.Profiles {
			if prof.Plugins == nil {
				continue
			}
			for _, p := range prof.Plugins.PreEnqueue.Enabled {
				if p.Name == enqueue.Name {
					profiles = append(profiles, prof.SchedulerName)
				}
			}
		}
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(schedulerVerbosity())))
	c, err := s.env.NewRecount(klog.NewContext(t.Context(), logger), d.Options, profiles)
	if err != nil {
		t.Fatalf("RecountCache: %v", err)
	}
	return c
}

// NewRecount builds and starts a recount cache (see RecountCache) reaching
// the apiserver through Env.Config, with opts as admission options for the
// named profiles (no admission when opts is nil), and waits until it has
// every object; ctx ends it. For schedulers RecountCache cannot reach, such
// as a process (whose options come from its dump).
func (e *Env) NewRecount(ctx context.Context, opts *admission.Options, profiles []string) (*cache.Cache, error) {
	c, err := startRecount(ctx, e.Config, opts, profiles)
	if err != nil {
		return nil, err
	}
	// As the command does: the recount admits as the scheduler would.
	if loop, ok := c.AdmissionLoop(nil); ok {
		go loop.Run(ctx)
	}
	return c, nil
}

// startRecount builds Caldera's cache on cfg as the command does, with no
// scheduler around it: the same informers, including the scheduler's own
// informer factory (so pods are selected as the scheduler selects them),
// started, and waited for until every listed object is delivered. opts
// turn admission on for profiles. It starts no admission loop and no
// status writer. ctx ends the informers.
func startRecount(ctx context.Context, cfg *rest.Config, opts *admission.Options, profiles []string) (*cache.Cache, error) {
	const name = "recount"
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(name))
	cfg = rest.CopyConfig(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := scheduler.NewInformerFactory(cs, 0, nil)
	h := feed.ClientHandle(name, cfg, cs, factory)
	p := cache.NewProvider(status.AlwaysLeading())
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	// What the scheduler's plugins would hand the Provider; feed.Wire
	// applies it.
	if opts != nil {
		for _, prof := range profiles {
			if err := p.EnableAdmission(prof, *opts); err != nil {
				return nil, err
			}
		}
	}
	if err := p.EnableEvictions(name, false, false); err != nil {
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
	syncCtx, cancel := context.WithTimeout(ctx, cacheTimeout)
	defer cancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer of %v did not sync", typ)
		}
	}
	if !f.WaitForMembers(syncCtx) {
		return nil, fmt.Errorf("gang members were not listed within %v", cacheTimeout)
	}
	// A store counts as synced before its handlers have seen the list: a
	// pass run now could see no nodes.
	for _, done := range f.HandlersSynced() {
		if !clientcache.WaitFor(syncCtx, "", done) {
			return nil, fmt.Errorf("the cache's handlers (%s) were not handed the lists within %v", done.Name(), cacheTimeout)
		}
	}
	return c, nil
}
