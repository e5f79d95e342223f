// Package feed feeds Caldera's cache from the API server: it wires the
// scheduler's informers and Caldera's own to the cache's typed entry
// points (cache.ApplyPod, ApplyNode, ApplyQueue, ...), builds the clients
// and informer factories that needs, and runs the gang dialects' adapters.
// The cache itself watches nothing, so tools and tests can feed it
// directly. The command wires the feed once every plugin is built (after
// app.Setup) and starts it before the scheduler runs.
package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/admission"
	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qinformers "github.com/caldera-sched/caldera/pkg/apis/generated/informers/externalversions"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/podslim"
	"github.com/caldera-sched/caldera/pkg/status"
)

// SyncTimeout bounds how long Start waits for each informer of the feed's
// own; a missing CRD shows up there as a start-up error, not a silent hang.
const SyncTimeout = 60 * time.Second

// Feed is the wiring of one cache: its start-up steps and the handler
// registrations whose sync says the cache has seen every listed object.
type Feed struct {
	c *cache.Cache
	h fwk.Handle

	mu      sync.Mutex
	started bool
	steps   []step

	// pods is the handler on the scheduler's pod informer (gang members,
	// and with admission every pod); handlers are the others on the
	// scheduler's informers (nodes; with admission, namespaces): an
	// informer counts as synced once its store is, before its handlers
	// have been handed the initial list, and a pass run in between saw a
	// cluster without nodes and refused everything.
	pods     clientcache.ResourceEventHandlerRegistration
	handlers []clientcache.ResourceEventHandlerRegistration
}

// step is one step of Start.
type step struct {
	what string
	run  func(ctx context.Context, logger klog.Logger) error
}

// Wire has p apply its profiles' settings to its cache (Provider.Seal:
// a plugin built after it is refused, since it would not be fed), then
// wires that cache to h's informers and to informers of its own, as the
// settings ask (queue admission's), and runs every adapter's Watch. It
// starts nothing (Start does). Call it once every plugin is built, before
// the scheduler's informers start.
func Wire(ctx context.Context, h fwk.Handle, p *cache.Provider, adapters ...dialect.Adapter) (*Feed, error) {
	c, err := p.Seal()
	if err != nil {
		return nil, err
	}
	f := &Feed{c: c, h: h}
	cfg := status.CRDConfig(h.KubeConfig())
	for _, a := range adapters {
		if err := a.Watch(ctx, h, cfg, c, f.setUp); err != nil {
			return nil, err
		}
	}
	readsByName := false
	for _, a := range adapters {
		readsByName = readsByName || a.On()
	}
	for _, wire := range []func(context.Context) error{
		f.wirePods, f.wireNodes, f.wireFinished,
		func(ctx context.Context) error { return f.wireJoinedFinished(ctx, readsByName) },
		f.wireAdmission, f.wireJobDeadlines,
	} {
		if err := wire(ctx); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// setUp adds a step to Start; it refuses once Start has run, since
// nothing would run the step.
func (f *Feed) setUp(what string, run func(ctx context.Context, logger klog.Logger) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return fmt.Errorf("%s set up after the cache started: plugins are built before Start", what)
	}
	f.steps = append(f.steps, step{what: what, run: run})
	return nil
}

// Start starts the feed's own informers, once, waiting until each has
// delivered its initial list (so that the first scheduling cycle sees every
// PodGroup and Queue). The scheduler's informers may be listing meanwhile
// (the registry starts them first unless they wait for leadership), or
// start in app.Run after this: WaitForMembers waits for them beside the
// scheduler. Later calls return nil. ctx ends the informers.
//
// The steps run at once: each lists from the API server and waits, and a
// restart's time to the first bind grew by the sum of those waits when
// they ran one after another. They are independent: the cache takes a
// group, queue or finished member in any order, as it must when they are
// created. Every step's error is returned, in the order the steps were
// set up.
func (f *Feed) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return nil
	}
	f.started = true
	logger := klog.FromContext(ctx)
	errs := make([]error, len(f.steps))
	var wg sync.WaitGroup
	for i, s := range f.steps {
		wg.Go(func() {
			began := time.Now()
			if errs[i] = s.run(ctx, logger); errs[i] == nil {
				logger.V(2).Info("Caldera feed step synced", "what", s.what, "took", time.Since(began))
			}
		})
	}
	wg.Wait()
	f.steps = nil
	return errors.Join(errs...)
}

// WaitForMembers blocks until the scheduler's pod informer has delivered
// its initial list to the cache, or ctx ends; it reports which, and tells
// the cache (Cache.MembersListed), which then lets gang pods through
// PreEnqueue. The command runs it beside the scheduler; tools and tests
// that start a handle's informer factory themselves call it to wait.
func (f *Feed) WaitForMembers(ctx context.Context) bool {
	if !clientcache.WaitFor(ctx, "", f.pods.HasSyncedChecker()) {
		return false
	}
	f.c.MembersListed(klog.FromContext(ctx))
	return true
}

// HandlersSynced returns what says that the cache's handlers on the
// scheduler's informers have been handed every listed pod, node and
// namespace.
func (f *Feed) HandlersSynced() []clientcache.DoneChecker {
	out := []clientcache.DoneChecker{f.pods.HasSyncedChecker()}
	for _, r := range f.handlers {
		out = append(out, r.HasSyncedChecker())
	}
	return out
}

// wirePods feeds the scheduler's own pod informer to the cache: it holds
// every unfinished pod anyway, and an informer of our own would hold a
// second copy of each, doubling the cache's memory per bound pod.
func (f *Feed) wirePods(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var err error
	f.pods, err = f.h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod := asPod(obj); pod != nil {
				f.c.ApplyPod(logger, nil, pod)
			}
		},
		UpdateFunc: func(old, obj any) {
			if o, pod := asPod(old), asPod(obj); o != nil && pod != nil {
				f.c.ApplyPod(logger, o, pod)
			}
		},
		DeleteFunc: func(obj any) {
			if pod := asPod(obj); pod != nil {
				f.c.DeletePod(logger, pod)
			}
		},
	})
	return err
}

// wireNodes feeds the scheduler's node informer: it is started by the
// scheduler and synced before the first scheduling cycle.
func (f *Feed) wireNodes(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	reg, err := f.h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { applyNode(logger, f.c, obj) },
		UpdateFunc: func(_, obj any) { applyNode(logger, f.c, obj) },
		DeleteFunc: func(obj any) {
			if n := objectOf[*v1.Node](obj); n != nil {
				f.c.DeleteNode(n)
			}
		},
	})
	f.handlers = append(f.handlers, reg)
	return err
}

func applyNode(logger klog.Logger, c *cache.Cache, obj any) {
	if n := objectOf[*v1.Node](obj); n != nil {
		c.ApplyNode(logger, n)
	}
}

// wireFinished feeds finished gang members. The scheduler's pod informer
// drops finished pods (a pod that succeeds arrives as a delete), but
// PodGroup status counts succeeded and failed members, so they come from
// informers of our own, limited by label and phase and slimmed to what the
// cache reads: members by label; and the finished Job pods without the
// label, for gangs by annotation (an annotation cannot be selected on), the
// annotated ones slimmed and the rest cut to bare identities. Only Jobs:
// other controllers' pods do not finish as members do.
func (f *Feed) wireFinished(ctx context.Context) error {
	labelled := informers.NewSharedInformerFactoryWithOptions(f.h.ClientSet(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = gangbook.PodGroupLabel
			o.FieldSelector = cache.FinishedSelector
		}),
		informers.WithTransform(podslim.Pod))
	jobs := informers.NewSharedInformerFactoryWithOptions(f.h.ClientSet(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "!" + gangbook.PodGroupLabel + "," + batchv1.JobNameLabel
			o.FieldSelector = cache.FinishedSelector
		}),
		informers.WithTransform(podslim.JobPod))
	var regs []clientcache.ResourceEventHandlerRegistration
	for _, factory := range []informers.SharedInformerFactory{labelled, jobs} {
		reg, err := factory.Core().V1().Pods().Informer().AddEventHandler(f.finishedHandler(ctx))
		if err != nil {
			return err
		}
		regs = append(regs, reg)
	}
	return f.setUp("finished members", func(ctx context.Context, logger klog.Logger) error {
		labelled.Start(ctx.Done())
		jobs.Start(ctx.Done())
		if err := waitSynced(ctx, "finished member pods", regs...); err != nil {
			return err
		}
		logger.V(2).Info("Caldera cache synced its groups and finished members")
		return nil
	})
}

// wireJoinedFinished feeds the finished members of Volcano's and
// upstream's gangs when either API is read: they join by annotation or by
// spec.schedulingGroup, which no selector reaches, so this informer lists
// finished pods without the label and keeps those that join a group.
func (f *Feed) wireJoinedFinished(ctx context.Context, on bool) error {
	if !on {
		return nil
	}
	factory := informers.NewSharedInformerFactoryWithOptions(f.h.ClientSet(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "!" + gangbook.PodGroupLabel + ",!" + batchv1.JobNameLabel
			o.FieldSelector = cache.FinishedSelector
		}),
		informers.WithTransform(podslim.JoinedPod))
	reg, err := factory.Core().V1().Pods().Informer().AddEventHandler(clientcache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool { pod := asPod(obj); return pod != nil && gangbook.JoinsByName(pod) },
		Handler:    f.finishedHandler(ctx),
	})
	if err != nil {
		return err
	}
	return f.setUp("finished members of Volcano's and upstream's gangs", func(ctx context.Context, _ klog.Logger) error {
		factory.Start(ctx.Done())
		return waitSynced(ctx, "finished members of Volcano's and upstream's gangs", reg)
	})
}

// finishedHandler hands finished members to the cache.
func (f *Feed) finishedHandler(ctx context.Context) clientcache.ResourceEventHandlerFuncs {
	logger := klog.FromContext(ctx)
	return clientcache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod := asPod(obj); pod != nil {
				f.c.ApplyFinishedPod(logger, nil, pod)
			}
		},
		UpdateFunc: func(old, obj any) {
			if o, pod := asPod(old), asPod(obj); o != nil && pod != nil {
				f.c.ApplyFinishedPod(logger, o, pod)
			}
		},
		DeleteFunc: func(obj any) {
			if pod := asPod(obj); pod != nil {
				f.c.DeleteFinishedPod(logger, pod)
			}
		},
	}
}

// wireAdmission feeds queue admission when a profile enabled it: Caldera's
// Queues from an informer of our own, namespaces (their queue label) from
// the scheduler's, and ResourceQuotas when admission checks them.
func (f *Feed) wireAdmission(ctx context.Context) error {
	if !f.c.Admitting() {
		return nil
	}
	client, err := qclient.NewForConfig(status.CRDConfig(f.h.KubeConfig()))
	if err != nil {
		return fmt.Errorf("building Queue client: %w", err)
	}
	factory := qinformers.NewSharedInformerFactory(client, 0)
	qreg, err := factory.Scheduling().V1alpha1().Queues().Informer().AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { applyQueue(f.c, obj) },
		UpdateFunc: func(_, obj any) { applyQueue(f.c, obj) },
		DeleteFunc: func(obj any) {
			if q := objectOf[*qapi.Queue](obj); q != nil {
				f.c.DeleteQueue(q)
			}
		},
	})
	if err != nil {
		return err
	}
	sif := f.h.SharedInformerFactory()
	nsReg, err := sif.Core().V1().Namespaces().Informer().AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { applyNamespace(f.c, obj) },
		UpdateFunc: func(_, obj any) { applyNamespace(f.c, obj) },
		DeleteFunc: func(obj any) {
			if ns := objectOf[*v1.Namespace](obj); ns != nil {
				f.c.DeleteNamespace(ns)
			}
		},
	})
	if err != nil {
		return err
	}
	f.handlers = append(f.handlers, nsReg)
	if f.c.ChecksResourceQuota() {
		rq := sif.Core().V1().ResourceQuotas()
		if _, err := rq.Informer().AddEventHandler(clientcache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { f.c.QuotasChanged() },
			UpdateFunc: func(_, _ any) { f.c.QuotasChanged() },
			DeleteFunc: func(any) { f.c.QuotasChanged() },
		}); err != nil {
			return err
		}
		f.c.SetQuotas(rq.Lister())
	}
	return f.setUp("queue admission", func(ctx context.Context, _ klog.Logger) error {
		factory.Start(ctx.Done())
		return waitSynced(ctx, "Queues (is the Queue CRD, scheduling.caldera.dev/v1alpha1, installed and readable?)", qreg)
	})
}

// wireJobDeadlines feeds the cache the run-time limits Jobs declare
// (spec.activeDeadlineSeconds, which their pods do not carry) when
// admission is on: from an informer of our own, slimmed to identity and
// deadline, so the scheduler's factory does not keep whole Jobs.
func (f *Feed) wireJobDeadlines(ctx context.Context) error {
	if !f.c.Admitting() {
		return nil
	}
	factory := informers.NewSharedInformerFactoryWithOptions(f.h.ClientSet(), 0, informers.WithTransform(admission.SlimJob))
	reg, err := factory.Batch().V1().Jobs().Informer().AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { applyJob(f.c, obj) },
		UpdateFunc: func(_, obj any) { applyJob(f.c, obj) },
		DeleteFunc: func(obj any) {
			if job := objectOf[*batchv1.Job](obj); job != nil {
				f.c.DeleteJob(job)
			}
		},
	})
	if err != nil {
		return err
	}
	return f.setUp("Job deadlines", func(ctx context.Context, _ klog.Logger) error {
		factory.Start(ctx.Done())
		return waitSynced(ctx, "Jobs (can the scheduler list and watch batch/v1 jobs?)", reg)
	})
}

func applyJob(c *cache.Cache, obj any) {
	if job := objectOf[*batchv1.Job](obj); job != nil {
		c.ApplyJob(job)
	}
}

func applyQueue(c *cache.Cache, obj any) {
	if q := objectOf[*qapi.Queue](obj); q != nil {
		c.ApplyQueue(q)
	}
}

func applyNamespace(c *cache.Cache, obj any) {
	if ns := objectOf[*v1.Namespace](obj); ns != nil {
		c.ApplyNamespace(ns)
	}
}

// waitSynced waits, SyncTimeout at most, until the handlers of regs have
// been handed their informers' initial lists. WaitFor returns as soon as
// they have (WaitForCacheSync polls every 100 ms).
func waitSynced(ctx context.Context, what string, regs ...clientcache.ResourceEventHandlerRegistration) error {
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	for _, r := range regs {
		if !clientcache.WaitFor(syncCtx, "", r.HasSyncedChecker()) {
			return fmt.Errorf("%s did not sync within %v", what, SyncTimeout)
		}
	}
	return nil
}

// objectOf is obj as a T (nil when it is not one), unwrapping the final
// state an informer hands a deletion it missed.
func objectOf[T any](obj any) T {
	t, _ := dialect.ObjectOf[T](obj)
	return t
}

// asPod is obj as a pod, nil when it is not one.
func asPod(obj any) *v1.Pod { return objectOf[*v1.Pod](obj) }
