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
	"maps"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Cache is the shared snapshot. All methods are safe for concurrent use.
type Cache struct {
	handle fwk.Handle
	// membersSynced is set once the scheduler's pod informer has delivered
	// its initial list to the cache: until then a group's members may be
	// missing, so gang pods wait in PreEnqueue and no status is written.
	membersSynced *onceSignal
	// membersOnce runs membersListed once (MembersListed).
	membersOnce sync.Once

	mu     sync.RWMutex
	groups map[gangbook.GroupKey]*gangbook.Group
	// memberOf remembers each member's group, so an update that changes or
	// drops the label is applied to the group the pod left.
	memberOf map[types.UID]gangbook.GroupKey
	nodes    map[string]resources.List
	total    resources.List

	// dirty holds groups whose status or Events may need writing.
	dirty map[gangbook.GroupKey]struct{}
	// implicit is the book of gangs asked for by annotation (implicit.go).
	implicit annotation.Book
	// notices are the Warning Events about pods queued for the writer.
	notices podNotices
	// protect holds the bound gang members that lack the annotations that
	// keep autoscalers from scaling their nodes down (protect.go).
	protect protectBook
	// tooLarge holds groups PreFilter refused as larger than the cluster,
	// re-activated when the cluster grows.
	tooLarge map[gangbook.GroupKey]struct{}

	// adm is the queue-admission side, nil unless a profile's
	// CalderaEnqueue enabled it (Provider.EnableAdmission; set by Seal).
	adm *admission.State
	// feasible is per-node free room and reservations for admission's
	// placement check (package noderoom, feasiblestate.go, feasible.go).
	feasible admission.FeasibleState
	// reclaim and preempt: CalderaReclaim runs these actions, so admission
	// may count what they can take back (from queues above their deserved
	// share; from lower priorities of the group's own queue). Set once, by
	// Provider.Seal (Provider.EnableEvictions).
	reclaim, preempt bool

	// evictions are the evictions in flight, for every profile: reclaim's
	// and preemption's, and the overrun evictions with their state.
	evictions admission.EvictionBook

	// reservingProfiles are the profiles whose CalderaGang records
	// reservations (Reserve, Permit), by name; set once, by
	// Provider.Seal, before the cache is fed.
	reservingProfiles map[string]bool

	// queueSeen is set once the scheduling queue has run PreEnqueue: from
	// then on Activate is safe and useful (see activate).
	queueSeen atomic.Bool

	// metrics remembers the label series this cache published (metrics.go).
	metrics metricsState

	// lead decides when status is written (NewProvider).
	lead *status.Leadership
	// requests shares equal request lists among pods; guarded by mu.
	requests convert.RequestInterner
	// bindSlots bound the binding calls in flight (CalderaBinder).
	bindSlots Slots

	// profiles are the profiles that built the cache: which are plain,
	// and their Event recorders (profiles.go). Not guarded by mu.
	profiles profileBook
}

// newEmpty returns a cache with no informers attached.
func newEmpty(ctx context.Context, h fwk.Handle) *Cache {
	RegisterMetrics()
	return &Cache{
		handle:   h,
		groups:   map[gangbook.GroupKey]*gangbook.Group{},
		memberOf: map[types.UID]gangbook.GroupKey{},
		nodes:    map[string]resources.List{},
		total:    resources.List{},
		dirty:    map[gangbook.GroupKey]struct{}{},
		tooLarge: map[gangbook.GroupKey]struct{}{},

		membersSynced: newOnceSignal("Caldera's gang members"),
	}
}

// FinishedSelector selects pods in a terminal phase: the complement of the
// scheduler's pod informer's status.phase!=Succeeded,status.phase!=Failed
// (a pod without a phase matches both; onFinishedPod leaves it to the other).
const FinishedSelector = "status.phase!=" + string(v1.PodPending) + ",status.phase!=" + string(v1.PodRunning) + ",status.phase!=" + string(v1.PodUnknown)

// membersListed records that every member the scheduler's pod informer
// listed at start has been delivered.
func (c *Cache) membersListed(logger klog.Logger) {
	c.mu.Lock()
	c.membersSynced.fire()
	act := map[string]*v1.Pod{}
	for _, g := range c.groups {
		// The members listed joined without it (joinLocked); what it
		// would activate is activated below.
		c.refreshLocked(g)
		if g.Enqueueable {
			maps.Copy(act, g.PendingPodsLocked())
		}
		// A gang listed with its minimum bound was told it was scheduled
		// by the process that bound it: a restart or failover does not
		// post that Event again, one per running gang.
		if n := noticeOf(g); n.Reason == gang.ReasonScheduled {
			g.LastEvent = noticeID(n)
		}
		if c.adm.On() {
			u := c.adm.Units[admission.GangUnitKey(g.Key)]
			c.adm.Short.Track(u, true)
			c.adm.Overdue.Track(g, u, true)
		}
	}
	groups := len(c.groups)
	c.mu.Unlock()
	logger.V(2).Info("Caldera cache synced gang members", "groups", groups)
	c.activate(logger, act)
}

// MembersListed says that the scheduler's pod informer has delivered its
// initial list to the cache (pkg/feed waits for that). The first call lets
// gang pods through PreEnqueue: it activates the pending members of every
// group that was already enqueueable. Until it is called gang pods wait and
// no status is written. Later calls do nothing.
func (c *Cache) MembersListed(logger klog.Logger) {
	c.membersOnce.Do(func() { c.membersListed(logger) })
}

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
func (c *Cache) groupLocked(key gangbook.GroupKey) *gangbook.Group {
	g := c.groups[key]
	if g == nil {
		g = &gangbook.Group{Key: key, Members: map[types.UID]*gangbook.Member{}}
		c.groups[key] = g
	}
	return g
}

// dropIfEmptyLocked forgets a group that has neither a PodGroup nor members.
func (c *Cache) dropIfEmptyLocked(g *gangbook.Group) {
	if g.Obj == nil && len(g.Members) == 0 {
		if g.BackoffTimer != nil {
			g.BackoffTimer.Stop()
		}
		delete(c.groups, g.Key)
		delete(c.tooLarge, g.Key)
	}
}

// refreshLocked re-evaluates whether the group may enter the queue and returns
// the pending members to activate when the answer just became yes.
func (c *Cache) refreshLocked(g *gangbook.Group) map[string]*v1.Pod {
	c.dirty[g.Key] = struct{}{}
	c.adm.SyncGangUnitLocked(g, c.dirty, c.membersSynced.fired())
	ok := gang.CanEnqueue(g.Obj != nil, g.Spec, g.Counts)
	was := g.Enqueueable
	g.Enqueueable = ok
	if !ok || was {
		return nil
	}
	return g.PendingPodsLocked()
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
