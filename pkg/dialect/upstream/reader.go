package upstream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	sched "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	schedlisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// One barrier holds the pods of upstream's gangs: Caldera's Permit.
// kube-scheduler's own gang machinery (the GangScheduling plugin, which its
// defaults add, and the PodGroup scheduling cycle, in which its queue hands
// out a whole group) runs only with the GenericWorkload gate on in the
// scheduler's own process. So the adapter reads upstream's PodGroups only
// when that gate is off in this process; with the gate on, upstream's
// barrier owns these pods and Caldera sees plain pods (docs/gang-apis.md
// says why).

// OwnedByKubeScheduler reports whether kube-scheduler's own gang machinery
// runs in this process (the GenericWorkload gate is on here).
func OwnedByKubeScheduler() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload)
}

// JoinedGroup is the upstream PodGroup pod joins when Caldera schedules
// upstream's gangs (OwnedByKubeScheduler is false). The gate is read only
// for a pod that names a group, so other pods pay nothing.
func JoinedGroup(pod *v1.Pod) (string, bool) {
	name, ok := GroupName(pod)
	if !ok || OwnedByKubeScheduler() {
		return "", false
	}
	return name, true
}

// DefaultPoll is how often a Reader asks the API server whether upstream's
// PodGroup API is served: an apiserver upgrade, a rollout that answers
// NotFound for a while, or --runtime-config changed may make it appear or
// go while the scheduler runs.
const DefaultPoll = 30 * time.Second

// syncTimeout bounds the wait for the informer's first list at start.
const syncTimeout = 60 * time.Second

// Reader is the upstream adapter of one scheduler: while the API server
// serves scheduling.k8s.io PodGroups it watches them and hands each to the
// cache (a dialect.Sink) as a group spec, and it is what the status writer
// reads of them. It follows the API appearing and going away: when it
// appears the informer starts, when it goes the groups it handed over are
// deleted from the sink (their members wait for a PodGroup again, as they
// would for a deleted one). NewReader.
type Reader struct {
	poll time.Duration
	// discover asks whether the API is served; discovery through the
	// scheduler's client unless a test replaces it.
	discover func() (bool, error)
	cs       kubernetes.Interface
	sink     dialect.Sink

	mu sync.Mutex
	// lister is the running informer's, nil while the API is not served;
	// gen counts informers started, so that an event of a stopped one,
	// delivered late, is dropped; stop ends the running one.
	lister schedlisters.PodGroupLister
	gen    int
	stop   context.CancelFunc
}

// NewReader returns a Reader that reads nothing until Watch.
func NewReader() *Reader { return &Reader{poll: DefaultPoll} }

// On reports whether Watch set the reader up: this process leaves
// upstream's gangs to Caldera and has a client. Whether the API is served
// right now is another matter (UpstreamPodGroup finds nothing while not).
func (r *Reader) On() bool { return r.sink != nil }

// Watch sets the reader up to follow upstream's PodGroup API, unless this
// process's own gang machinery owns these pods. At the cache's start it
// starts the informer if the API is served (waiting for its first list,
// so that the first scheduling cycle sees every PodGroup), then follows
// the API appearing and going away every poll period.
func (r *Reader) Watch(ctx context.Context, h fwk.Handle, _ *rest.Config, sink dialect.Sink, setUp dialect.SetUp) error {
	logger := klog.FromContext(ctx)
	if OwnedByKubeScheduler() {
		logger.Info("The GenericWorkload feature gate is on in the scheduler: kube-scheduler's own gang scheduling holds pods of scheduling.k8s.io PodGroups, so Caldera schedules them as plain pods")
		return nil
	}
	if h.ClientSet() == nil {
		return nil
	}
	return r.watch(h.ClientSet(), sink, setUp)
}

// watch is Watch over the client cs.
func (r *Reader) watch(cs kubernetes.Interface, sink dialect.Sink, setUp dialect.SetUp) error {
	r.cs, r.sink = cs, sink
	if r.discover == nil {
		r.discover = func() (bool, error) { return served(r.cs) }
	}
	return setUp("upstream's PodGroups", func(ctx context.Context, logger klog.Logger) error {
		on, err := r.discover()
		if err != nil {
			return err
		}
		if on {
			if err := r.start(ctx, logger, true); err != nil {
				return err
			}
		} else {
			logger.V(2).Info("Upstream's PodGroup API is not served; reading none until it is", "apiVersion", APIVersion)
		}
		go r.follow(ctx, logger)
		return nil
	})
}

// served reports whether the API server serves upstream's PodGroups. Not
// served (GenericWorkload off, or the group version not enabled by
// --runtime-config) is no error; failing to ask is.
func served(cs kubernetes.Interface) (bool, error) {
	list, err := cs.Discovery().ServerResourcesForGroupVersion(APIVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", APIVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" }), nil
}

// follow asks every poll period whether the API is served, and starts or
// stops the informer when that changed, until ctx ends.
func (r *Reader) follow(ctx context.Context, logger klog.Logger) {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		on, err := r.discover()
		if err != nil {
			logger.V(2).Info("Cannot ask whether upstream's PodGroup API is served; asking again later", "err", err)
			continue
		}
		r.mu.Lock()
		reading := r.lister != nil
		r.mu.Unlock()
		switch {
		case on && !reading:
			logger.Info("Upstream's PodGroup API appeared; reading its PodGroups", "apiVersion", APIVersion)
			if err := r.start(ctx, logger, false); err != nil {
				logger.Error(err, "Cannot read upstream's PodGroups; trying again later")
			}
		case !on && reading:
			logger.Info("Upstream's PodGroup API went away; its gangs wait for their PodGroups", "apiVersion", APIVersion)
			r.stopReading(logger)
		}
	}
}

// start runs an informer of upstream's PodGroups feeding the sink, waiting
// for its first list when wait is set.
func (r *Reader) start(ctx context.Context, logger klog.Logger, wait bool) error {
	ictx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(r.cs, 0)
	inf := factory.Scheduling().V1beta1().PodGroups()
	r.mu.Lock()
	r.gen++
	gen := r.gen
	r.mu.Unlock()
	reg, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.deliver(logger, gen, nil, obj, false) },
		UpdateFunc: func(old, obj any) { r.deliver(logger, gen, old, obj, false) },
		DeleteFunc: func(obj any) { r.deliver(logger, gen, nil, obj, true) },
	})
	if err != nil {
		cancel()
		return err
	}
	factory.Start(ictx.Done())
	r.mu.Lock()
	r.lister, r.stop = inf.Lister(), cancel
	r.mu.Unlock()
	if !wait {
		return nil
	}
	syncCtx, done := context.WithTimeout(ctx, syncTimeout)
	defer done()
	if !cache.WaitFor(syncCtx, "", reg.HasSyncedChecker()) {
		return fmt.Errorf("upstream's PodGroups did not sync within %v: can the scheduler list scheduling.k8s.io podgroups?", syncTimeout)
	}
	logger.V(2).Info("Caldera cache synced upstream's PodGroups")
	return nil
}

// stopReading stops the informer and deletes from the sink every group it
// handed over, as if each PodGroup had been deleted.
func (r *Reader) stopReading(logger klog.Logger) {
	r.mu.Lock()
	lister, stop := r.lister, r.stop
	r.lister, r.stop = nil, nil
	r.gen++ // the stopped informer's late events are dropped from now on
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	if lister == nil {
		return
	}
	pgs, _ := lister.List(labels.Everything())
	for _, pg := range pgs {
		r.sink.DeleteGroup(logger, Spec(pg))
	}
}

// deliver hands an event of the informer started as gen to the sink,
// unless that informer has been stopped since. The lock is held while the
// sink takes the event, so that stopReading's deletions come after it.
func (r *Reader) deliver(logger klog.Logger, gen int, old, obj any, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return
	}
	dialect.Deliver(r.sink, logger, specOf(old), specOf(obj), deleted)
}

// specOf reads an informer event's PodGroup as a spec; nil for anything
// else, which the sink ignores.
func specOf(obj any) *groupspec.Spec {
	pg, ok := dialect.ObjectOf[*sched.PodGroup](obj)
	if !ok || pg == nil {
		return nil
	}
	return Spec(pg)
}

// UpstreamPodGroup returns the PodGroup as the informer has it; nothing
// while the API is not served.
func (r *Reader) UpstreamPodGroup(key types.NamespacedName) (*sched.PodGroup, bool) {
	r.mu.Lock()
	lister := r.lister
	r.mu.Unlock()
	if lister == nil {
		return nil, false
	}
	pg, err := lister.PodGroups(key.Namespace).Get(key.Name)
	return pg, err == nil
}
