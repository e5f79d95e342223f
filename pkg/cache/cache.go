// Package cache is Caldera's shared snapshot of the cluster: one instance per
// scheduler process, read by every plugin of every profile, kept current by
// informer events. It plays the part of Volcano's scheduler cache, but it is
// event-driven: every pod, PodGroup and Node event updates per-group and
// cluster aggregates in O(1), so no plugin ever scans all pods.
//
// The cache makes no API writes: it hands copied-out work to the status
// writer (pkg/status, Volcano's closeSession) through the status.Source
// methods, and the command starts that writer.
package cache

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// PodGroupLabel ties a pod to a PodGroup of the same namespace.
const PodGroupLabel = v1alpha1.PodGroupLabel

// syncTimeout bounds how long Start waits for the cache's informers; a
// missing PodGroup CRD shows up there as a startup error, not a silent hang.
const syncTimeout = 60 * time.Second

// GroupKey names a group: a PodGroup's namespace and name. It is a struct, not a
// "ns/name" string, so that hot paths look groups up without building strings.
type GroupKey struct {
	Namespace, Name string
}

// String renders the key as namespace/name for messages.
func (k GroupKey) String() string { return k.Namespace + "/" + k.Name }

// named is the key as the status writer's work items name objects.
func (k GroupKey) named() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// GroupKeyOf returns the group a pod belongs to, and whether it belongs to
// one: the PodGroup its pod-group label names; else the Volcano PodGroup
// its group-name annotation names; else the upstream PodGroup its
// spec.schedulingGroup.podGroupName names, unless kube-scheduler's own gang
// scheduling is on in this process (podGroupName); the dialects share one
// key space per namespace (dialects.go); else, for a pod that asks for a gang by
// annotation (qapi.GangMinMemberAnnotation), the PodGroup of its controller
// (annotation.GroupOf). A name given wins over one derived, so a
// hand-written PodGroup always does. It is the one place that decides a
// pod's group; only an annotated pod costs an allocation (its name).
func GroupKeyOf(pod *v1.Pod) (GroupKey, bool) {
	if name := pod.Labels[PodGroupLabel]; name != "" {
		return GroupKey{Namespace: pod.Namespace, Name: name}, true
	}
	if name, ok := podGroupName(pod); ok {
		return GroupKey{Namespace: pod.Namespace, Name: name}, true
	}
	if _, asks := pod.Annotations[qapi.GangMinMemberAnnotation]; !asks {
		return GroupKey{}, false
	}
	name, ok := annotation.GroupOf(pod)
	if !ok {
		return GroupKey{}, false
	}
	return GroupKey{Namespace: pod.Namespace, Name: name}, true
}

// Cache is the shared snapshot. All methods are safe for concurrent use.
type Cache struct {
	handle fwk.Handle
	// adapters read the other gang APIs into the cache (dialects.go).
	adapters []dialect.Adapter
	// membersSynced is set once the scheduler's pod informer has delivered
	// its initial list to the cache: until then a group's members may be
	// missing, so gang pods wait in PreEnqueue and no status is written.
	membersSynced *onceSignal
	// memberReg is the cache's handler on the scheduler's pod informer;
	// membersOnce runs membersListed once it has synced (WaitForMembers).
	memberReg cache.ResourceEventHandlerRegistration
	// schedRegs are the cache's other handlers on the scheduler's
	// informers (nodes; with admission, every pod and namespace): an
	// informer counts as synced once its store is, before its handlers
	// have been handed the initial list, and a pass run in between saw a
	// cluster without nodes and refused everything. Appended before Start.
	schedRegs   []cache.ResourceEventHandlerRegistration
	membersOnce sync.Once

	mu     sync.RWMutex
	groups map[GroupKey]*group
	// memberOf remembers each member's group, so an update that changes or
	// drops the label is applied to the group the pod left.
	memberOf map[types.UID]GroupKey
	nodes    map[string]resources.List
	total    resources.List

	// dirty holds groups whose status or Events may need writing.
	dirty map[GroupKey]struct{}
	// implicit is the book of gangs asked for by annotation (implicit.go).
	implicit annotation.Book
	// notices are the Warning Events about pods queued for the writer.
	notices podNotices
	// tooLarge holds groups PreFilter refused as larger than the cluster,
	// re-activated when the cluster grows.
	tooLarge map[GroupKey]struct{}
	// deficitRefused holds the admission units PreFilter refused for a
	// capability deficit (deficit.go), activated when a bound pod leaves.
	deficitRefused map[queue.Key]struct{}
	// overdue watches gangs admitted before their members exist (overdue.go).
	overdue overdueState
	// freeRoomOnly holds the units admission counts no eviction room for
	// until their freeRoomUntil, or until a bound pod leaves.
	freeRoomOnly map[queue.Key]struct{}
	// short holds the admitted gangs short of members, with when an
	// admission pass first saw them so (zero until one has).
	short map[queue.Key]time.Time

	// adm is the queue-admission side, nil until CalderaEnqueue enables it.
	adm *admissionState
	// feasible is per-node free room and reservations for admission's
	// placement check (noderoom.go, feasible.go).
	feasible feasibleState
	// reclaim and preempt: CalderaReclaim runs these actions, so admission
	// may count what they can take back (from queues above their deserved
	// share; from lower priorities of the group's own queue).
	reclaim, preempt bool

	// evictions are the reclaim evictions in flight, for every profile.
	evictions evictionBook

	// reservingProfiles are the profiles whose CalderaGang records
	// reservations (Reserve, Permit), by name.
	reservingProfiles map[string]bool

	// queueSeen is set once the scheduling queue has run PreEnqueue: from
	// then on Activate is safe and useful (see activate).
	queueSeen atomic.Bool

	// metrics remembers the label series this cache published (metrics.go).
	metrics metricsState

	// starting holds what Start runs, in order: the cache's own informers,
	// then admission's, then the status writer; each set up by Get or an
	// Enable method. Guarded by startMu, with started.
	startMu  sync.Mutex
	started  bool
	starting []startFunc

	reconcilerOn   bool
	reconcilerOpts ReconcilerOptions
	// lead decides when status is written (NewProvider).
	lead *status.Leadership
	// requests shares equal request lists among pods; guarded by mu.
	requests requestInterner
	// bindSlots bound the binding calls in flight (CalderaBinder).
	bindSlots Slots

	// recorders are the profiles' Event recorders, by scheduler name: an
	// Event about a pod is reported by its own profile (reportingController
	// is the profile's name), not by whichever profile built the cache.
	recordersMu sync.RWMutex
	recorders   map[string]events.EventRecorderLogger
	// fallbackRecorder is the first Caldera profile's recorder: the cache
	// may have been built by a plain profile's queue sort, whose name must
	// not report Caldera's Events.
	fallbackRecorder events.EventRecorderLogger

	// profiles holds every profile that built a Caldera plugin, by name:
	// true when it built one other than the queue sort. Guarded by mu;
	// written while kube-scheduler builds its profiles, read by SortInfo.
	profiles map[string]bool
}

// profileLocked is the scheduler name of one of g's members ("" with none):
// the profile whose recorder reports Events about the PodGroup. A gang's
// members name one profile; if they do not, one of them is as good as any.
func (g *group) profileLocked() string {
	for _, m := range g.members {
		return m.pod.Spec.SchedulerName
	}
	return ""
}

// group is one PodGroup (or a set of pods naming a PodGroup not yet seen).
type group struct {
	key GroupKey
	// obj is the spec its adapter read from the group's PodGroup (of
	// whatever dialect); nil when no such object exists.
	obj     *groupspec.Spec
	spec    gang.Spec
	created time.Time
	members map[types.UID]*member
	counts  gang.Counts
	// pendingReq is what the members that wait to be placed ask for
	// (reachable, neither reserved nor bound): kept by countLocked with
	// counts, O(1) per member event; a started gang's demand beyond its
	// minimum (extrademand.go).
	pendingReq resources.List
	// priority is the highest member priority, so that all members sort
	// together; priorityCount is how many members have it.
	priority      int32
	priorityCount int
	// enqueueable caches gang.Enqueueable's answer, so that members are
	// activated once, when it flips to true, instead of on every member event.
	enqueueable bool
	// overdueWhy, when set, says why the promise of a gang created
	// members-after-admission is withdrawn: its members did not reach
	// Caldera in time (overdue.go). Admission then counts only the members
	// that exist.
	overdueWhy string
	// taskPlaced counts, per task, the members placed (unfinished) or
	// succeeded, kept by countLocked, for the per-task minimums
	// (gang.TasksReady); nil while no member has a task.
	taskPlaced map[string]int
	// minRequest is gang.MinRequest's answer, recomputed lazily after membership changes.
	minRequest      resources.List
	minRequestValid bool

	firstAttempt time.Time
	backoff      gang.BackoffState
	backoffTimer *time.Timer
	// unschedulable is the last reason the gang could not be placed; cleared
	// when it is placed.
	unschedulable string
	// lastEvent is the reason and message of the last Event written, so that
	// one state produces one Event.
	lastEvent string
	// toldWaiting: the last status work told the members' conditions that
	// the gang waits for members or its PodGroup (waitingWorkLocked).
	toldWaiting bool
	// finishing holds the bound members that left the scheduler's informer
	// without the finished-member informer having delivered them, each until
	// its deadline: they may be finishing, and while one may, the group's
	// status and Events wait (onUnfinishedPodDelete). Nil when empty.
	finishing map[types.UID]time.Time
}

// holdsStatusLocked reports whether a member of g may still be finishing at
// now, and forgets those whose deadline has passed.
func (g *group) holdsStatusLocked(now time.Time) bool {
	for uid, until := range g.finishing {
		if !now.Before(until) {
			delete(g.finishing, uid)
		}
	}
	if len(g.finishing) == 0 {
		g.finishing = nil
		return false
	}
	return true
}

type member struct {
	// confirmed: our informer has delivered the pod. An unconfirmed member was
	// recorded from the scheduler's copy in Reserve or Permit; if it is then
	// unreserved it is dropped, so a pod deleted mid-cycle leaves no ghost.
	confirmed bool
	// implicit: the member is in its group by annotation, not by label,
	// and counted in the cache's implicitBook.
	implicit bool
	// released: a gang release rejected the member while it waited in Permit;
	// its coming Unreserve is part of that release, not a new failure.
	released bool

	pod          *v1.Pod
	state        gang.Member
	request      resources.List
	waitingSince time.Time
	// task is the member's task (role) in its gang, "" for none
	// (podTask); read once, when the member is added.
	task string
	// reservedOn is the node the scheduler reserved for an unbound member
	// (the assumed copy's spec.nodeName in Reserve and Permit); "" when
	// not reserved. A bound member's node is its pod's.
	reservedOn string
}

// waiting reports whether the member waits for a node: neither placed nor
// finished.
func (m *member) waiting() bool { return !m.state.Placed() && !m.state.Phase.Terminal() }

// node is where a placed member holds room, "" when it holds none.
func (m *member) node() string {
	switch {
	case !m.state.Placed():
		return ""
	case m.state.Assigned:
		return m.pod.Spec.NodeName
	default:
		return m.reservedOn
	}
}

// newEmpty returns a cache with no informers attached.
func newEmpty(ctx context.Context, h fwk.Handle) *Cache {
	RegisterMetrics()
	return &Cache{
		handle:   h,
		groups:   map[GroupKey]*group{},
		memberOf: map[types.UID]GroupKey{},
		nodes:    map[string]resources.List{},
		total:    resources.List{},
		dirty:    map[GroupKey]struct{}{},
		tooLarge: map[GroupKey]struct{}{},

		membersSynced: newOnceSignal("Caldera's gang members"),
	}
}

func newCache(ctx context.Context, h fwk.Handle, adapters []dialect.Adapter) (*Cache, error) {
	logger := klog.FromContext(ctx)
	cfg := status.CRDConfig(h.KubeConfig())
	c := newEmpty(ctx, h)
	c.adapters = adapters
	for _, a := range c.adapters {
		if err := a.Watch(ctx, h, cfg, c); err != nil {
			return nil, err
		}
	}
	if err := c.watchJoinedFinished(ctx, h); err != nil {
		return nil, err
	}

	// Unfinished members come from the scheduler's own pod informer, which
	// holds every unfinished pod anyway: an informer of our own would hold a
	// second copy of each, doubling the cache's memory per bound pod. That
	// informer drops finished pods (a pod that succeeds arrives as a delete), but PodGroup
	// status counts succeeded and failed members, so finished members come
	// from an informer of our own, limited by label and phase and slimmed to
	// what the cache reads (slimPod). handlers.go says how the two agree.
	var err error
	c.memberReg, err = h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onUnfinishedPod(logger, obj) },
		UpdateFunc: func(old, obj any) { c.onUnfinishedPodUpdate(logger, old, obj) },
		DeleteFunc: func(obj any) { c.onUnfinishedPodDelete(logger, obj) },
	})
	if err != nil {
		return nil, err
	}
	finishedFactory := informers.NewSharedInformerFactoryWithOptions(h.ClientSet(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = PodGroupLabel
			o.FieldSelector = finishedSelector
		}),
		informers.WithTransform(slimPod))
	finishedReg, err := finishedFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onFinishedPod(logger, obj) },
		UpdateFunc: func(old, obj any) { c.onFinishedPodUpdate(logger, old, obj) },
		DeleteFunc: func(obj any) { c.onFinishedPodDelete(logger, obj) },
	})
	if err != nil {
		return nil, err
	}

	// Finished members of gangs by annotation: an annotation cannot be
	// selected on, so this informer lists the finished Job pods that lack
	// the pod-group label, keeping the annotated ones slimmed and the
	// rest as bare identities (slimJobPod). Only Jobs: other controllers'
	// pods do not finish as members do. Without it a completed Job's
	// PodGroup went back to Pending.
	jobFactory := informers.NewSharedInformerFactoryWithOptions(h.ClientSet(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "!" + PodGroupLabel + "," + batchv1.JobNameLabel
			o.FieldSelector = finishedSelector
		}),
		informers.WithTransform(slimJobPod))
	jobReg, err := jobFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onFinishedPod(logger, obj) },
		UpdateFunc: func(old, obj any) { c.onFinishedPodUpdate(logger, old, obj) },
		DeleteFunc: func(obj any) { c.onFinishedPodDelete(logger, obj) },
	})
	if err != nil {
		return nil, err
	}

	// Nodes come from the scheduler's own factory: it is started by the
	// scheduler and synced before the first scheduling cycle.
	nodeReg, err := h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNode(logger, obj) },
		UpdateFunc: func(_, obj any) { c.onNode(logger, obj) },
		DeleteFunc: func(obj any) { c.onNodeDelete(obj) },
	})
	if err != nil {
		return nil, err
	}
	c.schedRegs = append(c.schedRegs, nodeReg)

	c.starting = append(c.starting, func(ctx context.Context, logger klog.Logger) error {
		finishedFactory.Start(ctx.Done())
		jobFactory.Start(ctx.Done())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		// Wait for our handlers, not just the stores, to have seen the
		// initial lists: the scheduler then schedules on a populated cache.
		// WaitFor returns as soon as they have (WaitForCacheSync polls
		// every 100 ms).
		if !cache.WaitFor(syncCtx, "", finishedReg.HasSyncedChecker()) || !cache.WaitFor(syncCtx, "", jobReg.HasSyncedChecker()) {
			return fmt.Errorf("finished member pods did not sync within %v", syncTimeout)
		}
		c.mu.RLock()
		groups := len(c.groups)
		c.mu.RUnlock()
		logger.V(2).Info("Caldera cache synced its groups and finished members", "groups", groups)
		// The scheduler starts its own informers in app.Run, after this, so
		// the unfinished members cannot be waited for here: the command
		// runs WaitForMembers beside the scheduler.
		return nil
	})
	return c, nil
}

// startFunc is one step of Start.
type startFunc func(ctx context.Context, logger klog.Logger) error

// Start starts the cache's informers, once: its own (waiting until they have
// delivered their initial lists, so that the first scheduling cycle sees
// every PodGroup), then the Queue informer if a profile enabled admission.
// It starts nothing else: the command runs WaitForMembers, the AdmissionLoop
// and the status writer beside the scheduler. The command calls it once
// every plugin is built (after app.Setup), so no plugin factory starts
// anything; later calls return nil. ctx ends the informers.
func (c *Cache) Start(ctx context.Context) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.started {
		return nil
	}
	c.started = true
	logger := klog.FromContext(ctx)
	for _, f := range c.starting {
		if err := f(ctx, logger); err != nil {
			return err
		}
	}
	c.starting = nil
	return nil
}

func (c *Cache) isStarted() bool {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	return c.started
}

// setUp adds a step to Start; it refuses once Start has run, since
// nothing would run the step.
func (c *Cache) setUp(what string, f startFunc) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.started {
		return fmt.Errorf("%s set up after the cache started: plugins are built before Start", what)
	}
	c.starting = append(c.starting, f)
	return nil
}

// finishedSelector selects pods in a terminal phase: the complement of the
// scheduler's pod informer's status.phase!=Succeeded,status.phase!=Failed
// (a pod without a phase matches both; onFinishedPod leaves it to the other).
const finishedSelector = "status.phase!=" + string(v1.PodPending) + ",status.phase!=" + string(v1.PodRunning) + ",status.phase!=" + string(v1.PodUnknown)

// membersListed records that every member the scheduler's pod informer
// listed at start has been delivered.
func (c *Cache) membersListed(logger klog.Logger) {
	c.mu.Lock()
	c.membersSynced.fire()
	act := map[string]*v1.Pod{}
	for _, g := range c.groups {
		c.dirty[g.key] = struct{}{}
		if g.enqueueable {
			maps.Copy(act, g.pendingPodsLocked())
		}
		if c.adm.on() {
			u := c.adm.units[gangUnitKey(g.key)]
			c.unadmitShortLocked(g, u)
			c.trackOverdueLocked(g, u)
		}
	}
	groups := len(c.groups)
	c.mu.Unlock()
	logger.V(2).Info("Caldera cache synced gang members", "groups", groups)
	c.activate(logger, act)
}

// WaitForMembers blocks until the scheduler's pod informer has delivered its
// initial list to the cache, or ctx ends; it reports which. The first call
// to see the list delivered then lets gang pods through PreEnqueue: it
// activates the pending members of every group that was already
// enqueueable. Until some caller runs it, gang pods wait and no status is
// written, so the command runs it beside the scheduler (whose informers
// start after the cache's Start); tools and tests that start a handle's
// informer factory themselves call it to wait.
func (c *Cache) WaitForMembers(ctx context.Context) bool {
	if !cache.WaitFor(ctx, "", c.memberReg.HasSyncedChecker()) {
		return false
	}
	c.membersOnce.Do(func() { c.membersListed(klog.FromContext(ctx)) })
	return true
}

// HandlersSynced returns what says that the cache's handlers on the
// scheduler's informers have been handed every listed node, pod and
// namespace (and the gang members: MembersSynced). Call it after Start.
func (c *Cache) HandlersSynced() []cache.DoneChecker {
	out := []cache.DoneChecker{c.membersSynced}
	for _, r := range c.schedRegs {
		out = append(out, r.HasSyncedChecker())
	}
	return out
}

// MembersSynced is done once WaitForMembers has let gang pods through.
func (c *Cache) MembersSynced() cache.DoneChecker { return c.membersSynced }

// onceSignal is a cache.DoneChecker for an event that happens once.
type onceSignal struct {
	name string
	once sync.Once
	ch   chan struct{}
	// done mirrors ch for fired, which PreEnqueue calls for every gang pod:
	// an atomic load is cheaper than a receive.
	done atomic.Bool
}

func newOnceSignal(name string) *onceSignal { return &onceSignal{name: name, ch: make(chan struct{})} }

// Name implements cache.DoneChecker.
func (s *onceSignal) Name() string { return s.name }

// Done implements cache.DoneChecker.
func (s *onceSignal) Done() <-chan struct{} { return s.ch }

// fire marks the event as happened; later calls do nothing.
func (s *onceSignal) fire() {
	s.once.Do(func() {
		s.done.Store(true)
		close(s.ch)
	})
}

// fired reports whether fire was called, without blocking.
func (s *onceSignal) fired() bool { return s.done.Load() }

// groupLocked returns the group for key, creating it. Callers hold c.mu.
func (c *Cache) groupLocked(key GroupKey) *group {
	g := c.groups[key]
	if g == nil {
		g = &group{key: key, members: map[types.UID]*member{}}
		c.groups[key] = g
	}
	return g
}

// dropIfEmptyLocked forgets a group that has neither a PodGroup nor members.
func (c *Cache) dropIfEmptyLocked(g *group) {
	if g.obj == nil && len(g.members) == 0 {
		if g.backoffTimer != nil {
			g.backoffTimer.Stop()
		}
		delete(c.groups, g.key)
		delete(c.tooLarge, g.key)
	}
}

// refreshLocked re-evaluates whether the group may enter the queue and returns
// the pending members to activate when the answer just became yes.
func (c *Cache) refreshLocked(g *group) map[string]*v1.Pod {
	c.dirty[g.key] = struct{}{}
	c.syncGangUnitLocked(g)
	ok, _ := gang.Enqueueable(g.key.String(), g.obj != nil, g.spec, g.counts)
	was := g.enqueueable
	g.enqueueable = ok
	if !ok || was {
		return nil
	}
	return g.pendingPodsLocked()
}

func (g *group) pendingPodsLocked() map[string]*v1.Pod {
	out := make(map[string]*v1.Pod, g.counts.Pending)
	for _, m := range g.members {
		if m.waiting() {
			out[m.pod.Namespace+"/"+m.pod.Name] = m.pod
		}
	}
	return out
}

// waitingPodsLocked lists the members that wait for a node, for the status
// writer's conditions.
func (g *group) waitingPodsLocked() []*v1.Pod {
	var out []*v1.Pod
	for _, m := range g.members {
		if m.waiting() {
			out = append(out, m.pod)
		}
	}
	return out
}

// activate moves pods into the active queue. It must be called without c.mu
// held: the queue runs PreEnqueue, which reads the cache.
//
// The scheduler gives the framework its queue only after every plugin is
// built, while the cache's informers already deliver events during the
// build. Before the queue has asked PreEnqueue anything no pod can be waiting
// in it, so there is nothing to activate and the call is skipped.
func (c *Cache) activate(logger klog.Logger, pods map[string]*v1.Pod) {
	if len(pods) > 0 && c.queueSeen.Load() {
		c.handle.Activate(logger, pods)
	}
}
