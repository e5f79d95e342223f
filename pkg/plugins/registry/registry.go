// Package registry lists Caldera's plugins for the kube-scheduler command.
package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/plugins/binder"
	"github.com/caldera-sched/caldera/pkg/plugins/enqueue"
	"github.com/caldera-sched/caldera/pkg/plugins/gang"
	"github.com/caldera-sched/caldera/pkg/plugins/placement"
	"github.com/caldera-sched/caldera/pkg/plugins/queuesort"
	"github.com/caldera-sched/caldera/pkg/plugins/reclaim"
)

// Plugins is Caldera's plugin set for one scheduler: one cache shared by every
// profile, whose status writer follows the scheduler's own leader election.
type Plugins struct {
	lead     *cache.Leadership
	provider *cache.Provider
}

// New returns the plugin set of one scheduler. Pass Options to app.Setup, then
// FollowLeaderElection with what app.Setup returned and Start, before app.Run.
func New() *Plugins {
	lead := cache.NewLeadership()
	return &Plugins{lead: lead, provider: cache.NewProvider(lead)}
}

// Options returns the app options that register every Caldera plugin over this
// set's cache.
func (p *Plugins) Options() []app.Option { return options(p.provider) }

// FollowLeaderElection tells the cache which scheduler it serves: PodGroup and
// Queue status is then written only while that scheduler is leading (always,
// when it runs without leader election). Until it is called nothing is written.
func (p *Plugins) FollowLeaderElection(cc *schedulerserverconfig.CompletedConfig) {
	p.lead.Follow(cc.LeaderElection)
}

// Start starts what the plugins share, once: the cache's informers (waiting
// for their initial lists), the admission loop and the status writer. Call
// it after app.Setup, which builds the plugins, and before app.Run; an error
// (a missing CRD, say) is a start-up failure.
func (p *Plugins) Start(ctx context.Context) error { return p.provider.Start(ctx) }

// Cache returns the shared cache once the plugins have created it (after
// app.Setup), else nil: for tests and tools that inspect a running scheduler.
func (p *Plugins) Cache() *cache.Cache { return p.provider.Cache() }

func options(p *cache.Provider) []app.Option {
	with := func(newFn func(context.Context, runtime.Object, fwk.Handle, *cache.Provider) (fwk.Plugin, error)) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return newFn(ctx, obj, h, p)
		}
	}
	return []app.Option{
		app.WithPlugin(queuesort.Name, with(queuesort.New)),
		app.WithPlugin(gang.Name, with(gang.New)),
		app.WithPlugin(enqueue.Name, with(enqueue.New)),
		app.WithPlugin(reclaim.Name, with(reclaim.New)),
		app.WithPlugin(placement.Name, with(placement.New)),
		app.WithPlugin(binder.Name, with(binder.New)),
	}
}
