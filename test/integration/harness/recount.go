package harness

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/caldera-sched/caldera/internal/snapshot"
	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/plugins/enqueue"
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
	c, err := snapshot.StartCache(ctx, e.Config, snapshot.CacheOptions{
		Name: "recount", Admission: opts, Profiles: profiles, SyncTimeout: cacheTimeout,
	})
	if err != nil {
		return nil, err
	}
	// As the command does: the recount admits as the scheduler would.
	if loop, ok := c.AdmissionLoop(nil); ok {
		go loop.Run(ctx)
	}
	return c, nil
}
