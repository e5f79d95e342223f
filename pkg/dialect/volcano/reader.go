package volcano

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	vclisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"

	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// syncTimeout bounds the wait for the informers' first lists at start.
const syncTimeout = 60 * time.Second

// Reader is the Volcano adapter of one scheduler: it watches Volcano's
// PodGroups and Queues and hands each to the cache (a dialect.Sink) as a
// group spec or a Caldera Queue, and it is what the status writer reads of
// Volcano's objects (their informers' copies, and the Warning Events
// queued about Queues). The zero value is not usable; NewReader.
type Reader struct {
	on       bool
	client   Client
	sink     dialect.Sink
	pgLister vclisters.PodGroupLister
	qLister  vclisters.QueueLister

	mu sync.Mutex
	// warned is, per Queue, the fields Caldera does not honour it last
	// reported; warnings are the reports not yet handed to the writer,
	// the latest per Queue (a follower hands none out, so they stay
	// bounded by the Queues).
	warned   map[string]string
	warnings map[string]QueueWarning
	// counts are, per queue (spec.queue), its PodGroups by phase, kept
	// from the informer's events; recounted names the queues whose counts
	// changed since the writer last took them.
	counts    map[string]*QueueCounts
	recounted map[string]struct{}
}

// QueueCounts are a Volcano Queue's PodGroups by phase, as Volcano's vcctl
// and queue controller count them.
type QueueCounts struct {
	Pending, Inqueue, Running, Unknown, Completed int32
}

// add counts a PodGroup of phase p in (delta +1) or out (-1).
func (c *QueueCounts) add(p vc.PodGroupPhase, delta int32) {
	switch p {
	case vc.PodGroupPending:
		c.Pending += delta
	case vc.PodGroupInqueue:
		c.Inqueue += delta
	case vc.PodGroupRunning:
		c.Running += delta
	case vc.PodGroupUnknown:
		c.Unknown += delta
	case vc.PodGroupCompleted:
		c.Completed += delta
	}
}

// NewReader returns a Reader that reads nothing until Watch finds
// Volcano's API served.
func NewReader() *Reader { return &Reader{warned: map[string]string{}} }

// ReaderOver returns a Reader that is on, over the given client and
// listers, feeding sink: for tests and tools that fill the listers
// themselves. Its handlers are OnPodGroup and OnQueue.
func ReaderOver(client Client, pgs vclisters.PodGroupLister, qs vclisters.QueueLister, sink dialect.Sink) *Reader {
	r := NewReader()
	r.on, r.client, r.pgLister, r.qLister, r.sink = true, client, pgs, qs, sink
	return r
}

// On reports whether Watch found Volcano's API served.
func (r *Reader) On() bool { return r.on }

// Client is the client that writes Volcano's objects; nil when off.
func (r *Reader) Client() Client { return r.client }

// Watch sets up the informers of Volcano's PodGroups and Queues when the
// API server serves both (discovered once, here: a scheduler started
// before the CRDs were installed reads them after a restart). Absent, it
// does nothing.
func (r *Reader) Watch(ctx context.Context, h fwk.Handle, cfg *rest.Config, sink dialect.Sink, setUp dialect.SetUp) error {
	logger := klog.FromContext(ctx)
	served, err := served(h)
	if err != nil || !served {
		if err == nil {
			logger.V(2).Info("Volcano's scheduling API is not served; reading no Volcano PodGroups or Queues", "apiVersion", APIVersion)
		}
		return err
	}
	client, err := vcclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building Volcano client: %w", err)
	}
	factory := vcinformers.NewSharedInformerFactory(client, 0)
	pgInf := factory.Scheduling().V1beta1().PodGroups()
	qInf := factory.Scheduling().V1beta1().Queues()
	r.on, r.client, r.sink = true, ClientFor(client), sink
	r.pgLister, r.qLister = pgInf.Lister(), qInf.Lister()
	pgReg, err := pgInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.OnPodGroup(logger, nil, obj, false) },
		UpdateFunc: func(old, obj any) { r.OnPodGroup(logger, old, obj, false) },
		DeleteFunc: func(obj any) { r.OnPodGroup(logger, nil, obj, true) },
	})
	if err != nil {
		return err
	}
	qReg, err := qInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.OnQueue(obj, false) },
		UpdateFunc: func(_, obj any) { r.OnQueue(obj, false) },
		DeleteFunc: func(obj any) { r.OnQueue(obj, true) },
	})
	if err != nil {
		return err
	}
	return setUp("Volcano's PodGroups and Queues", func(ctx context.Context, logger klog.Logger) error {
		factory.Start(ctx.Done())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		for _, reg := range []cache.ResourceEventHandlerRegistration{pgReg, qReg} {
			if !cache.WaitFor(syncCtx, "", reg.HasSyncedChecker()) {
				return fmt.Errorf("Volcano's PodGroups or Queues did not sync within %v: can the scheduler read scheduling.volcano.sh (manifests/components/volcano)?", syncTimeout)
			}
		}
		logger.V(2).Info("Caldera cache synced Volcano's PodGroups and Queues")
		return nil
	})
}

// served reports whether the API server serves Volcano's PodGroups and
// Queues. Not served is no error; failing to ask is.
func served(h fwk.Handle) (bool, error) {
	if h.ClientSet() == nil {
		return false, nil
	}
	list, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(APIVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", APIVersion, err)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == name })
	}
	return has("podgroups") && has("queues"), nil
}

// OnPodGroup is the PodGroup informer's handler: an add (old nil), an
// update, or a deletion, each read as a group spec, and counted by phase
// for its queue.
func (r *Reader) OnPodGroup(logger klog.Logger, old, obj any, deleted bool) {
	r.count(old, obj, deleted)
	dialect.Deliver(r.sink, logger, specOf(old), specOf(obj), deleted)
}

// count moves a PodGroup event's object between its queue's phase counts.
// O(1).
func (r *Reader) count(old, obj any, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	move := func(o any, delta int32) {
		pg, _ := dialect.ObjectOf[*vc.PodGroup](o)
		if pg == nil {
			return
		}
		c := r.counts[pg.Spec.Queue]
		if c == nil {
			if r.counts == nil {
				r.counts, r.recounted = map[string]*QueueCounts{}, map[string]struct{}{}
			}
			c = &QueueCounts{}
			r.counts[pg.Spec.Queue] = c
		}
		before := *c
		c.add(pg.Status.Phase, delta)
		if *c != before {
			r.recounted[pg.Spec.Queue] = struct{}{}
		}
	}
	if deleted {
		move(obj, -1)
		return
	}
	move(old, -1)
	move(obj, +1)
}

// VolcanoQueueCounts returns queue name's PodGroups by phase.
func (r *Reader) VolcanoQueueCounts(name string) QueueCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.counts[name]; c != nil {
		return *c
	}
	return QueueCounts{}
}

// RecountedVolcanoQueues returns the queues whose counts changed since the
// last call, and forgets them.
func (r *Reader) RecountedVolcanoQueues() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.recounted))
	for name := range r.recounted {
		out = append(out, name)
		delete(r.recounted, name)
	}
	return out
}

// specOf reads an informer event's PodGroup as a spec; nil for anything
// else, which the sink ignores.
func specOf(obj any) *groupspec.Spec {
	pg, ok := dialect.ObjectOf[*vc.PodGroup](obj)
	if !ok || pg == nil {
		return nil
	}
	return Spec(pg)
}

// QueueWarning is a Warning Event about a Volcano Queue.
type QueueWarning struct {
	Queue   *vc.Queue
	Message string
}

// OnQueue is the Queue informer's handler. When a profile admits through
// queues the Queue goes to the sink as a Caldera Queue, and the fields
// Caldera does not honour are queued for a Warning Event, once per change
// of that list. Without admission Queues are not read, so none is warned
// about (and no warning waits for a writer that never takes it).
func (r *Reader) OnQueue(obj any, deleted bool) {
	in, _ := dialect.ObjectOf[*vc.Queue](obj)
	if in == nil {
		return
	}
	model, ignored, ok := Queue(in)
	if !ok {
		return
	}
	admitting := r.sink.Admitting()
	r.mu.Lock()
	switch {
	case deleted:
		delete(r.warned, in.Name)
		delete(r.warnings, in.Name)
	case admitting:
		r.noteIgnoredLocked(in, ignored)
	}
	r.mu.Unlock()
	if admitting {
		r.sink.SetQueue(model, deleted)
	}
}

// noteIgnoredLocked queues a warning about in when the fields it sets that
// Caldera does not honour changed since the last one.
func (r *Reader) noteIgnoredLocked(in *vc.Queue, ignored []Ignored) {
	var fields []string
	for _, i := range ignored {
		fields = append(fields, i.Field+" ("+i.Why+")")
	}
	list := strings.Join(fields, "; ")
	if list == r.warned[in.Name] {
		return
	}
	r.warned[in.Name] = list
	if list == "" {
		delete(r.warnings, in.Name)
		return
	}
	if r.warnings == nil {
		r.warnings = map[string]QueueWarning{}
	}
	r.warnings[in.Name] = QueueWarning{Queue: in.DeepCopy(), Message: "Caldera does not honour " + list}
}

// VolcanoQueueWarnings returns the Warning Events queued since the last
// call, and forgets them.
func (r *Reader) VolcanoQueueWarnings() []QueueWarning {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]QueueWarning, 0, len(r.warnings))
	for _, w := range r.warnings {
		out = append(out, w)
	}
	r.warnings = nil
	return out
}

// VolcanoPodGroup returns the PodGroup as the informer has it.
func (r *Reader) VolcanoPodGroup(key types.NamespacedName) (*vc.PodGroup, bool) {
	if !r.on {
		return nil, false
	}
	pg, err := r.pgLister.PodGroups(key.Namespace).Get(key.Name)
	return pg, err == nil
}

// VolcanoQueue returns the Queue as the informer has it.
func (r *Reader) VolcanoQueue(name string) (*vc.Queue, bool) {
	if !r.on {
		return nil, false
	}
	q, err := r.qLister.Get(name)
	return q, err == nil
}
