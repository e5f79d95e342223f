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
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// PodGroupLabel ties a pod to a PodGroup of the same namespace.
const PodGroupLabel = v1alpha1.PodGroupLabel

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
	// membersSynced is set once the scheduler's pod informer has delivered
	// its initial list to the cache: until then a group's members may be
	// missing, so gang pods wait in PreEnqueue and no status is written.
	membersSynced *onceSignal
	// membersOnce runs membersListed once (MembersListed).
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
	// protect holds the bound gang members that lack the annotations that
	// keep autoscalers from scaling their nodes down (protect.go).
	protect protectBook
	// tooLarge holds groups PreFilter refused as larger than the cluster,
	// re-activated when the cluster grows.
	tooLarge map[GroupKey]struct{}

	// adm is the queue-admission side, nil unless a profile's
	// CalderaEnqueue enabled it (Provider.EnableAdmission; set by Seal).
	adm *admissionState
	// feasible is per-node free room and reservations for admission's
	// placement check (package noderoom, feasiblestate.go, feasible.go).
	feasible feasibleState
	// reclaim and preempt: CalderaReclaim runs these actions, so admission
	// may count what they can take back (from queues above their deserved
	// share; from lower priorities of the group's own queue). Set once, by
	// Provider.Seal (Provider.EnableEvictions).
	reclaim, preempt bool

	// evictions are the evictions in flight, for every profile: reclaim's
	// and preemption's, and the overrun evictions with their state.
	evictions evictionBook

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
	requests requestInterner
	// bindSlots bound the binding calls in flight (CalderaBinder).
	bindSlots Slots

	// profiles are the profiles that built the cache: which are plain,
	// and their Event recorders (profiles.go). Not guarded by mu.
	profiles profileBook
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
	// status and Events wait (unfinishedPodDeleteLocked). Nil when empty.
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
	// state follows the flags so that the two pack into one word (a
	// gang.Member is five bytes): the member then fits the 80-byte size
	// class, not 96, and a restart allocates one per bound gang member.
	state gang.Member

	pod          *v1.Pod
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
		if g.enqueueable {
			maps.Copy(act, g.pendingPodsLocked())
		}
		if c.adm.on() {
			u := c.adm.units[gangUnitKey(g.key)]
			c.adm.short.track(u, true)
			c.adm.overdue.track(g, u, true)
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
	c.adm.syncGangUnitLocked(g, c.dirty, c.membersSynced.fired())
	ok := gang.CanEnqueue(g.obj != nil, g.spec, g.counts)
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
