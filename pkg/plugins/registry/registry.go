// Package registry lists Caldera's plugins for the kube-scheduler command.
package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/plugins/enqueue"
	"github.com/caldera-sched/caldera/pkg/plugins/gang"
	"github.com/caldera-sched/caldera/pkg/plugins/placement"
	"github.com/caldera-sched/caldera/pkg/plugins/queuesort"
	"github.com/caldera-sched/caldera/pkg/plugins/reclaim"
)

// Options returns the app options that register every Caldera plugin. Each call
// creates a fresh shared cache, so a process (or a test) that builds several
// schedulers gives each its own cache while all profiles of one scheduler share one.
func Options() []app.Option {
	return OptionsWith(cache.NewProvider())
}

// OptionsWith is Options with the plugins sharing the cache of p, so that the
// caller can reach the scheduler's cache (p.Cache()) once the scheduler is built.
// Give each scheduler its own Provider.
func OptionsWith(p *cache.Provider) []app.Option {
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
	}
}
