package cache

import (
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	admissionloop "github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// AdmissionOptions configure queue admission: CalderaEnqueue's args.
type AdmissionOptions struct {
	// DefaultQueue takes groups that name no queue; created when missing.
	DefaultQueue string
	// AdmitSingletons: pods without a PodGroup are groups of one that need
	// admission too. When false they bypass queues.
	AdmitSingletons bool
	// OvercommitFactor multiplies the cluster's allocatable in the cluster check.
	OvercommitFactor float64
	// StarvationThreshold is how long a group may wait at the head of its queue
	// before it reserves the queue.
	StarvationThreshold time.Duration
	// Period is how often an admission pass runs without events.
	Period time.Duration
	// CheckResourceQuota: a group's minimum must also fit its namespace's
	// ResourceQuotas (admission's ResourceQuota check, CheckQuota).
	CheckResourceQuota bool
	// LendIdleRoom: admission lends idle room beyond deserved shares to
	// reclaimable queues when reclaim runs (queue.Options.Lend).
	LendIdleRoom bool
	// ReservationsPerQueue is queue.Options.ReservationsPerQueue: how many
	// groups of each queue refused for room get a reservation over time
	// (timeplan.go); negative for none, 0 for the default.
	ReservationsPerQueue int
	// EvictOverruns: a pod past a run-time limit it declared by annotation
	// is evicted when a reservation that needs its room is due (overrun.go).
	EvictOverruns bool
}

// admissionState is the cache's queue side; guarded by Cache.mu.
type admissionState struct {
	opts     AdmissionOptions
	profiles map[string]bool
	queues   map[string]*qapi.Queue
	tree     *queue.Tree
	nsQueue  map[string]string
	pending  *queue.Pending
	units    map[queue.Key]*unit
	pods     map[types.UID]*podAcct
	// unitPods indexes pods by the unit they are accounted to, whether or
	// not the unit exists. Moving or re-creating a unit re-tags exactly
	// these: the member informer and the scheduler's pod informer deliver
	// a relabelled pod independently, so a gang's members and the pods
	// accounted to its unit can differ for a while. A slice (each account
	// knows its slot) rather than a set: most units are singletons, and a
	// one-entry map costs a few hundred bytes per pod.
	unitPods map[queue.Key][]*podAcct
	// planWaiting counts units admitted on a plan's room that still
	// reserve room (bookPlan): queue.Cluster.PlansWaiting.
	planWaiting int
	// nsPods indexes, per namespace, the accounts whose queue follows the
	// namespace's label (podAcct.followsNS): pods accounted without a unit,
	// e.g. the members of a PodGroup that does not exist.
	// namespaceQueueLocked moves them; their units move the others.
	nsPods map[string]map[types.UID]*podAcct
	usage  map[string]*queueUsage
	// extras counts members beyond their gang's minimum that are reserved
	// but not bound (extras.go).
	extras extraBook
	// demand is what started gangs' waiting extras ask for, per queue
	// (extrademand.go).
	demand extraDemand
	// byPrio is, per queue and pod priority, what bound pods request: what
	// preemption within the queue could free for a higher priority.
	byPrio map[string]map[int32]resources.List
	used   resources.List
	// outside is what bound pods in no queue request: other schedulers'
	// pods and the ones Caldera does not queue. Fair share divides only
	// what the queues can have, the allocatable less this.
	outside resources.List
	shares  *queue.Shares
	sorting map[string]queueSort
	// held names the queues that hold placement (hold.go).
	held map[string]bool
	kick chan struct{}
	// deficitRefused holds the admission units PreFilter refused for a
	// capability deficit (deficit.go), activated when a bound pod leaves.
	deficitRefused map[queue.Key]struct{}
	// ends holds the bound pods with a run-time limit (timeplan.go).
	ends map[types.UID]podEnd
	// est is what the bound pods without a limit hold and the estimated
	// starts planned on it (estimate.go).
	est estimates
	// jobDeadlines are the Jobs' activeDeadlineSeconds, by Job UID, of
	// the Jobs that set one (jobdeadline.go).
	jobDeadlines map[types.UID]int64
	// freeRoomOnly holds the units admission counts no eviction room for
	// until their freeRoomUntil, or until a bound pod leaves.
	freeRoomOnly map[queue.Key]struct{}
	// writes are the units whose admission verdict, or release, the
	// status writer is to write: it pulls them (AdmissionWrites), so
	// nothing is dropped when it falls behind, and a unit decided twice
	// between two pulls is written once, as last decided.
	writes admissionWrites
	quotas corelisters.ResourceQuotaLister
	// feas is the cache's per-node room, which pod accounts feed.
	feas *feasibleState
	// nominated holds our unbound pods whose status names a nominated
	// node, and clearing those whose nomination is being removed
	// (noticePendingLocked).
	nominated map[types.UID]*v1.Pod
	clearing  map[types.UID]bool
	// overdue watches gangs admitted before their members exist (overdue.go).
	overdue overdueState
	// short holds the admitted gangs short of members (short.go).
	short shortGangs
	// observeWait, when set, is told how long each unit waited for its
	// first admission (the cache's metric).
	observeWait func(queue string, wait time.Duration)
}

func (a *admissionState) on() bool { return a != nil }

func (a *admissionState) ours(p *v1.Pod) bool { return a.profiles[p.Spec.SchedulerName] }

// ChecksResourceQuota reports whether admission reads namespaces'
// ResourceQuotas (AdmissionOptions.CheckResourceQuota), so that the feed
// wires them.
func (c *Cache) ChecksResourceQuota() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.adm.on() && c.adm.opts.CheckResourceQuota
}

// newAdmissionState returns an empty admission state for profiles, without
// informers or goroutines; observeWait is told each unit's wait for its
// first admission.
func newAdmissionState(opts AdmissionOptions, observeWait func(queue string, wait time.Duration), profiles ...string) *admissionState {
	ours := make(map[string]bool, len(profiles))
	for _, p := range profiles {
		ours[p] = true
	}
	return &admissionState{
		opts:     opts,
		profiles: ours,
		queues:   map[string]*qapi.Queue{},
		tree:     queue.BuildTree(nil),
		nsQueue:  map[string]string{},
		pending:  queue.NewPending(),
		units:    map[queue.Key]*unit{},
		pods:     map[types.UID]*podAcct{},
		unitPods: map[queue.Key][]*podAcct{},
		nsPods:   map[string]map[types.UID]*podAcct{},
		usage:    map[string]*queueUsage{},
		byPrio:   map[string]map[int32]resources.List{},
		used:     resources.List{},
		outside:  resources.List{},
		sorting:  map[string]queueSort{},
		kick:     make(chan struct{}, 1),

		observeWait: observeWait,
	}
}

// attachLocked ties a, just installed as the cache's admission side, to the
// cache's per-node room (feas), and makes the gangs the cache already knows
// (groups) units now; dirty and synced are as syncGangUnitLocked takes them.
func (a *admissionState) attachLocked(feas *feasibleState, groups map[gangbook.GroupKey]*gangbook.Group, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	a.feas = feas
	for _, g := range groups {
		a.syncGangUnitLocked(g, dirty, synced)
	}
}

// observeAdmissionLocked tells observeWait of a unit's first admission.
func (a *admissionState) observeAdmissionLocked(u *unit, now time.Time) {
	if u.waitObserved {
		return
	}
	u.waitObserved = true
	wait := now.Sub(u.created)
	if u.created.IsZero() || wait < 0 {
		wait = 0
	}
	if a.observeWait != nil {
		a.observeWait(u.queue, wait)
	}
}

// DefaultQueue returns the queue that takes groups naming none, which the
// command has created (status.EnsureQueue), and whether admission is on.
func (c *Cache) DefaultQueue() (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.adm.on() {
		return "", false
	}
	return c.adm.opts.DefaultQueue, true
}

// kickLocked asks for an admission pass soon.
func (a *admissionState) kickLocked() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// AdmissionLoop returns the loop that runs this cache's admission passes
// (on its kicks and period, once the scheduler's informers and the gang
// members are in: ready, which pkg/feed gives), and false when no profile
// enabled admission. The command runs it: the cache starts no goroutine of
// its own.
func (c *Cache) AdmissionLoop(ready []cache.DoneChecker) (admissionloop.Loop, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.adm.on() {
		return admissionloop.Loop{}, false
	}
	return admissionloop.Loop{
		Pass:   c,
		Period: c.adm.opts.Period,
		Kicks:  c.adm.kick,
		Ready:  append(ready, c.membersSynced),
	}, true
}

// AdmissionPass runs Volcano's enqueue action once: it divides the cluster
// among the queues, admits what fits, activates the admitted groups' pods
// and hands decisions to the status writer.
func (c *Cache) AdmissionPass(logger klog.Logger, now time.Time) {
	c.mu.Lock()
	a := c.adm
	a.returnLapsedLocked(now, c.groups, c.dirty, c.membersSynced.fired())
	// The pods to evict for the kept reservations that are due; the
	// status writer evicts them (OverrunEvictions).
	in := overrunInput{adm: a, groups: c.groups, feasible: &c.feasible, lead: c.lead, book: &c.evictions}
	c.evictions.overrun.queue(c.evictions.overrun.choose(in, now))
	c.adm.syncDirtyDemandLocked()
	// Placement first: it finds the admitted singletons no node takes,
	// whose release must show in the usage the shares are divided on.
	pl := c.placementLocked(now)
	a.releaseUnplaceableLocked(pl)
	// Shares divide what the queues can have: room held by pods outside
	// every queue is no queue's, and counted in it every deserved share
	// would be overstated, so a queue above its real share would never be
	// reclaimed from.
	a.shares = queue.DivideWithout(a.tree, c.total, a.outside, c.adm.queueUsageLocked())
	opts := a.admitOptionsLocked(pl, c.reclaim, c.preempt)
	res := a.pending.Admit(a.shares, queue.Cluster{Allocatable: c.total, Used: a.used, PlansWaiting: a.planWaiting}, opts, now)
	pl.finish()
	act := map[string]*v1.Pod{}
	pl.retryHeldOut(act)
	// Each admission is logged at V(2), as the scheduler logs each bind:
	// when a group was let in, and on what (a reclaim plan, lent room),
	// is what explains the evictions that may follow it.
	var admittedLog []admittedEntry
	for _, o := range res.Admitted {
		u := a.units[o.Group.Key]
		if u == nil {
			continue
		}
		if logger.V(2).Enabled() {
			admittedLog = append(admittedLog, admittedEntry{o.Group.Key, u.queue, o.Decision.OnPlan, o.Decision.Lent})
		}
		a.admitLocked(u, o.Decision, now, act, c.dirty)
	}
	for name := range a.sorting {
		s := a.sorting[name]
		s.share = a.shares.Share(name)
		a.sorting[name] = s
	}
	maps.Copy(act, a.refusedExtrasFittingLocked(c.groups, c.preempt))
	maps.Copy(act, c.adm.noteRefusalsLocked(res.Refused))
	c.metrics.recordQueues(a, c.lead)
	// res belongs to the Pending: read it under the lock.
	nAdmitted, nRefused := len(res.Admitted), len(res.Refused)
	c.mu.Unlock()
	for _, e := range admittedLog {
		logger.V(2).Info("Admitted", "unit", e.unit.String(), "queue", e.queue, "onPlan", e.onPlan, "lent", e.lent)
	}
	if nAdmitted > 0 {
		logger.V(3).Info("Admission pass", "admitted", nAdmitted, "refused", nRefused)
	}
	c.activate(logger, act)
}

// admittedEntry is one admission of a pass, logged after the lock is let go.
type admittedEntry struct {
	unit         queue.Key
	queue        string
	onPlan, lent bool
}

// queueUsageLocked is what each queue holds, reserves and asks for, as the
// shares are divided on: pending groups' requests and started gangs' waiting
// members as demand; bound pods, and extras reserved on a node, as held.
// O(queues).
func (a *admissionState) queueUsageLocked() map[string]queue.Usage {
	usage := make(map[string]queue.Usage, len(a.usage))
	for _, name := range a.pending.Queues() {
		usage[name] = queue.Usage{Pending: a.pending.PendingRequest(name)}
	}
	for name, l := range a.demand.byQueue {
		us := usage[name]
		us.Pending = l.Clone().Add(us.Pending)
		usage[name] = us
	}
	for name, u := range a.usage {
		us := usage[name]
		us.Allocated, us.Inflight = u.allocated, u.inflight
		usage[name] = us
	}
	// Extras reserved on a node (waiting in Permit, or binding) hold room
	// as bound pods do, and the share check of the next extra counts them
	// as held (shareUseLocked): they are the queue's demand too. Left out,
	// a gang re-forming from replacements got a share for the member still
	// waiting and none for the one reserved, and the waiting one was
	// refused until Permit's timeout released both.
	for name, l := range a.extras.byQueue {
		us := usage[name]
		us.Allocated = l.Clone().Add(us.Allocated)
		usage[name] = us
	}
	return usage
}

// admitOptionsLocked are the pass's options: the profile's, the cache's
// eviction settings (reclaim, preempt: CalderaReclaim runs them) and the
// quota check, and the placement check pl.
func (a *admissionState) admitOptionsLocked(pl *passPlacement, reclaim, preempt bool) queue.Options {
	opts := queue.Options{
		OvercommitFactor:     a.opts.OvercommitFactor,
		StarvationThreshold:  a.opts.StarvationThreshold,
		Reclaim:              reclaim,
		Lend:                 a.opts.LendIdleRoom,
		ReservationsPerQueue: a.opts.ReservationsPerQueue,
		Placement:            pl,
	}
	if preempt {
		opts.Preemptible = a.preemptibleLocked
	}
	if a.quotas != nil {
		opts.Quota = a.quotaCheckLocked()
	}
	return opts
}

// admitLocked records the pass's admission of u on decision d: it reserves
// its request, its status is to be written, and its waiting pods are added
// to act, to be moved to the active queue; a gang's is marked in dirty, the
// cache's set of groups whose status is to be written. O(members).
func (a *admissionState) admitLocked(u *unit, d queue.Decision, now time.Time, act map[string]*v1.Pod, dirty map[gangbook.GroupKey]struct{}) {
	u.admitted, u.onPlan, u.failedFit, u.roomVerdict = true, d.OnPlan, false, nil
	if u.gang != nil {
		u.noteAdmittedSpec(u.gang)
	}
	a.observeAdmissionLocked(u, now)
	a.setInflightLocked(u)
	if u.gang != nil {
		dirty[u.gang.Key] = struct{}{}
		if u.gang.Enqueueable {
			maps.Copy(act, u.gang.PendingPodsLocked())
		}
	} else if u.pod.Spec.NodeName == "" {
		act[u.pod.Namespace+"/"+u.pod.Name] = u.pod
	}
	// A singleton admitted without having waited gets no Event: its
	// Scheduled Event follows at once, and a backlog of plain pods would
	// otherwise post one Event per pod at the same moment, which stalls
	// binds behind new API connections. One that was told NotAdmitted is
	// told it may go, and so is one admitted on lent room: it is the first
	// a reclaim will evict, and only a contended queue borrows, so these
	// Events are few.
	msg := "admitted to queue " + u.queue
	if d.Lent {
		msg = d.Message()
	}
	if u.gang != nil || u.told() || d.Lent {
		a.noteLocked(u, true, queue.CheckNone, "", msg, now, dirty)
	}
}

// verdictRefresh is how long a refused unit's written verdict stands while
// a new verdict differs from it only in its numbers (same check, queue and
// resource: "remaining capability 0" becoming "1"). Each rewrite of a
// verdict writes an Event, the PodGroup's annotation and the
// PodScheduled condition of every waiting pod, and the numbers move with
// every bind and completion in the queue: written at once, a backlog of a
// thousand pods would be rewritten a thousand times per completion. A
// change of check (capability to fair share, say) or an admission is
// written at once; the deferred numbers are written by the first period
// after this has passed, so the last numbers always land.
const verdictRefresh = 30 * time.Second

// noteLocked queues the Event (and annotation) for a decision, once per
// change, with the unit's pods that wait for a node: the writer tells them
// the verdict in their PodScheduled condition. stage names a refusal's
// check, queue and resource ("" for an admission): a refusal at the stage
// already written waits for verdictRefresh; a gang's verdict marks it in
// dirty, the cache's set of groups whose status is to be written.
// O(members).
func (a *admissionState) noteLocked(u *unit, admitted bool, check queue.Check, stage, msg string, now time.Time, dirty map[gangbook.GroupKey]struct{}) {
	id := fmt.Sprint(admitted, msg)
	if s, ok := a.est.starts[u.key]; ok && !admitted {
		// Not in the message, but written with it (the PodGroup's
		// estimated-start annotation).
		id = fmt.Sprint(id, "@", s)
	}
	n := u.notice
	if n != nil && n.id == id {
		return
	}
	if !admitted && u.told() && stage == n.stage && now.Sub(n.at) < verdictRefresh {
		return
	}
	if n == nil {
		n = &unitNotice{}
		u.notice = n
	}
	n.id, n.stage, n.at = id, stage, now
	n.msg = ""
	if !admitted {
		n.msg = msg
	}
	if u.gang != nil {
		// A Volcano PodGroup's status carries the verdict (volcano.go).
		dirty[u.gang.Key] = struct{}{}
	}
	a.writes.verdict(u.key, admitted, check, msg)
}

// noticePendingLocked queues a NotAdmitted Event for every pending group whose
// admission verdict changed. It runs on the status leader's period, not in the
// pass: a queue that stops (missing, closed) leaves verdicts on groups the
// pass never examined. dirty is the cache's set of groups whose status is to
// be written. O(pending groups); the Event is written once per change.
func (a *admissionState) noticePendingLocked(now time.Time, dirty map[gangbook.GroupKey]struct{}) {
	a.clearStaleNominationsLocked()
	for key, u := range a.units {
		if u.admitted {
			continue
		}
		d, ok := a.pending.Decision(key)
		// A gang short of members is told so by CalderaGang, unless its
		// promise of members was withdrawn (overdue.go): nothing else
		// says why it lost its admission.
		overdue := u.gang != nil && u.gang.OverdueWhy != ""
		if !ok || d.Check == queue.CheckNone || d.Check == queue.CheckMembers && !overdue {
			continue
		}
		a.noteLocked(u, false, d.Check, a.verdictStage(u, d), a.decisionMessage(u, d), now, dirty)
	}
}

// verdictStage is what a refusal's verdict says apart from its numbers:
// a new or moved reservation or estimated start is news too, told at once
// (a published estimate moves only by more than a minute: steady).
func (a *admissionState) verdictStage(u *unit, d queue.Decision) string {
	t, _ := a.feas.reservationOf(u.key)
	return fmt.Sprint(d.Check, "/", d.Queue, "/", d.Resource, "/", d.Permanent, "/", t.start, "/", a.est.starts[u.key])
}

// Admitted answers CalderaEnqueue's PreEnqueue: whether pod's group is
// admitted, else why not.
func (c *Cache) Admitted(pod *v1.Pod) (bool, string) {
	c.markQueueSeen()
	c.mu.RLock()
	defer c.mu.RUnlock()
	ok, msg, _ := c.adm.admittedLocked(pod, c.groups)
	return ok, msg
}

// admittedLocked is Admitted, with pod's unit (nil when it has none);
// groups are the cache's groups by key. O(1).
func (a *admissionState) admittedLocked(pod *v1.Pod, groups map[gangbook.GroupKey]*gangbook.Group) (bool, string, *unit) {
	key, labelled := gangbook.GroupKeyOf(pod)
	var uk queue.Key
	if labelled {
		if g := groups[key]; g == nil || g.Obj == nil {
			// CalderaGang says what the pod waits for.
			return true, "", nil
		}
		uk = gangUnitKey(key)
	} else {
		if !a.opts.AdmitSingletons {
			return true, "", nil
		}
		uk = podUnitKey(pod)
	}
	u := a.units[uk]
	if u == nil {
		return false, "waiting for admission", nil
	}
	if u.admitted {
		if msg := a.heldMessage(u, pod); msg != "" {
			return false, msg, u
		}
		return true, "", u
	}
	if d, ok := a.pending.Decision(uk); ok {
		return false, a.decisionMessage(u, d), u
	}
	return false, "waiting for admission", u
}

// trackNominationLocked keeps a.nominated current for one pod event. O(1).
func (a *admissionState) trackNominationLocked(pod *v1.Pod, deleted bool) {
	if !deleted && pod.Spec.NodeName == "" && pod.Status.NominatedNodeName != "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed && a.ours(pod) {
		if a.nominated == nil {
			a.nominated = map[types.UID]*v1.Pod{}
		}
		if a.nominated[pod.UID] != pod {
			// A new version: a write for the old one fails its
			// resourceVersion precondition, so this one is decided anew.
			delete(a.clearing, pod.UID)
			a.writes.forgetPod(pod.UID)
		}
		a.nominated[pod.UID] = pod
		return
	}
	delete(a.nominated, pod.UID)
	delete(a.clearing, pod.UID)
	a.writes.forgetPod(pod.UID)
}

// clearStaleNominationsLocked queues the removal of the nominated node of
// every pod whose unit is not admitted. Such a pod is gated in PreEnqueue,
// so it runs no scheduling cycle that would use or drop the nomination, yet
// kube-scheduler keeps counting the room it names as taken for every pod of
// lower priority: a gang that lost its admission (or a pod preempted for
// before a restart and refused since) held that room for as long as it
// waited. O(nominated pods).
func (a *admissionState) clearStaleNominationsLocked() {
	for uid, pod := range a.nominated {
		acct := a.pods[uid]
		if acct == nil || a.clearing[uid] {
			continue
		}
		if u := a.units[acct.unit]; u == nil || u.admitted {
			continue
		}
		a.writes.clearNomination(pod)
		if a.clearing == nil {
			a.clearing = map[types.UID]bool{}
		}
		a.clearing[uid] = true
	}
}
