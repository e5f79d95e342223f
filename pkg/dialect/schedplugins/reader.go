package schedplugins

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// syncTimeout bounds the wait for the informer's first list at start.
const syncTimeout = 60 * time.Second

// Reader is the scheduler-plugins adapter of one scheduler: it watches
// scheduler-plugins' PodGroups (also those Caldera creates for gangs asked
// for by annotation) and hands each to the cache (a dialect.Sink) as a
// group spec, and it is what the status writer reads of them. The
// PodGroup CRD is Caldera's own dependency, so, unlike other dialects', its
// absence is a start-up failure. NewReader.
type Reader struct {
	client pgclient.Interface
	lister pglisters.PodGroupLister
}

// NewReader returns a Reader that reads nothing until Watch.
func NewReader() *Reader { return &Reader{} }

// ReaderOver returns a Reader over the given client and lister: for tests
// and tools that fill the lister themselves.
func ReaderOver(client pgclient.Interface, lister pglisters.PodGroupLister) *Reader {
	return &Reader{client: client, lister: lister}
}

// On reports whether Watch set the reader up.
func (r *Reader) On() bool { return r.lister != nil }

// Client is the client that writes PodGroups; nil before Watch.
func (r *Reader) Client() pgclient.Interface { return r.client }

// Watch sets up the PodGroup informer to feed sink; it starts, and waits
// for the first list, when the cache starts, so that the first scheduling
// cycle sees every PodGroup.
func (r *Reader) Watch(ctx context.Context, _ fwk.Handle, cfg *rest.Config, sink dialect.Sink, setUp dialect.SetUp) error {
	logger := klog.FromContext(ctx)
	client, err := pgclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building PodGroup client: %w", err)
	}
	factory := pginformers.NewSharedInformerFactory(client, 0)
	inf := factory.Scheduling().V1alpha1().PodGroups()
	r.client, r.lister = client, inf.Lister()
	reg, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { sink.SetGroup(logger, specOf(obj)) },
		UpdateFunc: func(old, obj any) { sink.UpdateGroup(logger, specOf(old), specOf(obj)) },
		DeleteFunc: func(obj any) { sink.DeleteGroup(logger, specOf(obj)) },
	})
	if err != nil {
		return err
	}
	return setUp("PodGroups", func(ctx context.Context, logger klog.Logger) error {
		factory.Start(ctx.Done())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		if !cache.WaitFor(syncCtx, "", reg.HasSyncedChecker()) {
			return fmt.Errorf("PodGroups did not sync within %v: is the PodGroup CRD (scheduling.x-k8s.io/v1alpha1) installed and readable?", syncTimeout)
		}
		logger.V(2).Info("Caldera cache synced PodGroups")
		return nil
	})
}

// specOf reads an informer event's PodGroup as a spec; nil for anything
// else, which the sink ignores.
func specOf(obj any) *groupspec.Spec {
	pg, ok := dialect.ObjectOf[*v1alpha1.PodGroup](obj)
	if !ok || pg == nil {
		return nil
	}
	return Spec(pg)
}

// PodGroup returns the PodGroup as the informer has it.
func (r *Reader) PodGroup(key types.NamespacedName) (*v1alpha1.PodGroup, bool) {
	if r.lister == nil {
		return nil, false
	}
	pg, err := r.lister.PodGroups(key.Namespace).Get(key.Name)
	return pg, err == nil
}
