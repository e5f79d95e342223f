package registry

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"

	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/plugins/gang"
)

// Start has the scheduler's informers list beside the cache's own: after a
// restart the pod list is most of the time to the first bind, and waiting
// for the cache's lists first added theirs to it. A scheduler that holds
// its informers until it leads (DelayCacheUntilActive with leader
// election) keeps them held: app.Run starts them on winning the lease.
func TestStartListsTheSchedulersInformersEarly(t *testing.T) {
	for _, tc := range []struct {
		name         string
		delay, elect bool
		want         bool
	}{
		{"no leader election", false, false, true},
		{"leader election", false, true, true},
		{"delayed until leading", true, true, false},
		{"delay without leader election", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cfg, cs, factory := serve(t)
			p := New()
			h := feed.ClientHandle("caldera", cfg, cs, factory)
			if _, err := registryOf(t, p)[gang.Name](ctx, nil, h); err != nil {
				t.Fatal(err)
			}
			sc := &schedulerserverconfig.Config{}
			sc.ComponentConfig.DelayCacheUntilActive = tc.delay
			if tc.elect {
				sc.LeaderElection = &leaderelection.LeaderElectionConfig{
					Lock: &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "me"}},
				}
			}
			cc := sc.Complete()
			p.FollowLeaderElection(&cc)
			if err := p.Start(ctx); err != nil {
				t.Fatalf("Start: %v", err)
			}
			// WaitForCacheSync answers for the informers started only.
			_, got := factory.WaitForCacheSync(ctx.Done())[reflect.TypeFor[*v1.Pod]()]
			if got != tc.want {
				t.Errorf("the scheduler's pod informer started by Start: %v, want %v", got, tc.want)
			}
		})
	}
}
