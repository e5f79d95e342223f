// Package registry lists Caldera's plugins for the kube-scheduler command.
package registry

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"

	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/dumpsignal"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/plugins/binder"
	"github.com/caldera-sched/caldera/pkg/plugins/enqueue"
	"github.com/caldera-sched/caldera/pkg/plugins/gang"
	"github.com/caldera-sched/caldera/pkg/plugins/placement"
	"github.com/caldera-sched/caldera/pkg/plugins/queuesort"
	"github.com/caldera-sched/caldera/pkg/plugins/reclaim"
	"github.com/caldera-sched/caldera/pkg/plugins/reservation"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Plugins is Caldera's plugin set for one scheduler: one cache shared by every
// profile, whose status writer follows the scheduler's own leader election.
type Plugins struct {
	lead     *status.Leadership
	provider *cache.Provider
	// podGroups, volcano and upstream read those gang APIs into the
	// cache, and are what the status writer reads of their objects.
	podGroups *schedplugins.Reader
	volcano   *volcano.Reader
	upstream  *upstream.Reader

	// handle is the first profile's framework handle: its clients and the
	// nominator (the scheduling queue every profile shares) are the
	// process's, whichever profile's handle it is.
	mu     sync.Mutex
	handle fwk.Handle
	// listEarly: the scheduler's informers may start before Start waits
	// for the cache's own (app.Run starts them before leader election
	// unless DelayCacheUntilActive holds them until this process leads).
	listEarly bool
}

// New returns the plugin set of one scheduler. Pass Options to app.Setup, then
// FollowLeaderElection with what app.Setup returned and Start, before app.Run.
func New() *Plugins {
	lead := status.NewLeadership()
	pr, vr, ur := schedplugins.NewReader(), volcano.NewReader(), upstream.NewReader()
	return &Plugins{lead: lead, podGroups: pr, volcano: vr, upstream: ur, provider: cache.NewProvider(lead)}
}

// Options returns the app options that register every Caldera plugin over this
// set's cache.
func (p *Plugins) Options() []app.Option { return options(p.provider, p.keep) }

// keep records h if it is the first handle a factory got.
func (p *Plugins) keep(h fwk.Handle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handle == nil {
		p.handle = h
	}
}

// FollowLeaderElection tells the cache which scheduler it serves: PodGroup and
// Queue status is then written only while that scheduler is leading (always,
// when it runs without leader election). Until it is called nothing is written.
func (p *Plugins) FollowLeaderElection(cc *schedulerserverconfig.CompletedConfig) {
	p.lead.Follow(cc.LeaderElection)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listEarly = !cc.ComponentConfig.DelayCacheUntilActive || cc.LeaderElection == nil
}

// Start starts what the plugins share, once: the scheduler's informers
// when app.Run would start them before leadership anyway, and the cache's
// (waiting for their initial lists); then, beside the scheduler, the wait
// for its gang members, the admission loop, the dump signals, the default
// queue's creation and the status writer, each if a profile asked for it. The cache
// itself runs no goroutine: everything that runs on its own is started here.
// Call it after app.Setup, which builds the plugins, and before app.Run; an
// error (a missing CRD, say) is a start-up failure.
func (p *Plugins) Start(ctx context.Context) error {
	if p.provider.Cache() == nil {
		return nil // no Caldera plugin in any profile
	}
	p.mu.Lock()
	h, listEarly := p.handle, p.listEarly
	p.mu.Unlock()
	// Wire applies what the profiles asked for to the cache (Seal).
	f, err := feed.Wire(ctx, h, p.provider, p.podGroups, p.volcano, p.upstream)
	if err != nil {
		return err
	}
	c := p.provider.Cache()
	if listEarly {
		// The scheduler's informers list while the cache's own do: after a
		// restart the pod list is most of the time to the first bind, and
		// waiting for the cache's lists first added theirs to it. Every
		// handler is registered by now (app.Setup, Wire); app.Run's Start
		// finds them started. What reads the cache waits for both lists:
		// PreEnqueue for WaitForMembers, the admission loop for the
		// handlers' sync, and both start below, after f.Start.
		h.SharedInformerFactory().Start(ctx.Done())
	}
	if err := f.Start(ctx); err != nil {
		return err
	}
	go f.WaitForMembers(ctx)
	if loop, ok := c.AdmissionLoop(f.HandlersSynced()); ok {
		go loop.Run(ctx)
	}
	dumpsignal.Serve(ctx, c)
	cfg := status.CRDConfig(h.KubeConfig())
	cl := status.Clients{Pods: h.ClientSet(), Nominator: h, PodGroupObjects: p.podGroups}
	if p.volcano.On() {
		cl.Volcano, cl.VolcanoObjects = p.volcano.Client(), p.volcano
	}
	if p.upstream.On() {
		cl.UpstreamObjects = p.upstream
	}
	if cl.PodGroups, err = pgclient.NewForConfig(cfg); err != nil {
		return fmt.Errorf("building the PodGroup status client: %w", err)
	}
	if name, ok := c.DefaultQueue(); ok {
		if cl.Queues, err = qclient.NewForConfig(cfg); err != nil {
			return fmt.Errorf("building the Queue status client: %w", err)
		}
		go status.EnsureQueue(ctx, cl.Queues, name)
	}
	if cl.Volcano != nil {
		go status.EnsureVolcanoQueue(ctx, cl.Volcano)
	}
	if opts, ok := p.provider.StatusOptions(); ok {
		go status.New(c, cl).Run(ctx, opts.SyncPeriod, p.lead)
	}
	return nil
}

// Cache returns the shared cache once the plugins have created it (after
// app.Setup), else nil: for tests and tools that inspect a running scheduler.
func (p *Plugins) Cache() *cache.Cache { return p.provider.Cache() }

func options(p *cache.Provider, keep func(fwk.Handle)) []app.Option {
	with := func(newFn func(context.Context, runtime.Object, fwk.Handle, *cache.Provider) (fwk.Plugin, error)) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			keep(h)
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
		app.WithPlugin(reservation.Name, with(reservation.New)),
	}
}
