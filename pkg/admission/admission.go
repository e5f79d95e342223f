package admission

import (
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Options configure queue admission: CalderaEnqueue's args.
type Options struct {
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

// State is admission's side of the scheduler's state: queues, units, pod
// accounts and usage, extras, deficits, the pass's placement and the plan
// over time, and evictions in flight. The cache owns one and guards it with
// its lock (the methods named Locked).
type State struct {
	Opts     Options
	profiles map[string]bool
	Queues   map[string]*qapi.Queue
	Tree     *queue.Tree
	nsQueue  map[string]string
	Pending  *queue.Pending
	Units    map[queue.Key]*Unit
	Pods     map[types.UID]*PodAcct
	// UnitPods indexes pods by the unit they are accounted to, whether or
	// not the unit exists. Moving or re-creating a unit re-tags exactly
	// these: the member informer and the scheduler's pod informer deliver
	// a relabelled pod independently, so a gang's members and the pods
	// accounted to its unit can differ for a while. A slice (each account
	// knows its slot) rather than a set: a one-entry map costs a few
	// hundred bytes per pod. A singleton's own account is not listed at
	// all (soloSlot): its unit finds it through its pod.
	UnitPods map[queue.Key][]*PodAcct
	// PlanWaiting counts units admitted on a plan's room that still
	// reserve room (bookPlan): queue.Cluster.PlansWaiting.
	PlanWaiting int
	// nsPods indexes, per namespace, the accounts whose queue follows the
	// namespace's label (PodAcct.FollowsNS): pods accounted without a unit,
	// e.g. the members of a PodGroup that does not exist.
	// NamespaceQueueLocked moves them; their units move the others.
	nsPods map[string]map[types.UID]*PodAcct
	// asked is, for each account whose pod asks for a queue that does not
	// exist (it is charged to MissingQueue), the name it asks for. Rare,
	// so kept here rather than as a string in every account: that took
	// PodAcct to the 112-byte size class, and a restart holds one per pod.
	asked map[*PodAcct]string
	Usage map[string]*queueUsage
	// Extras counts members beyond their gang's minimum that are reserved
	// but not bound (extras.go).
	Extras extraBook
	// Demand is what started gangs' waiting extras ask for, per queue
	// (extrademand.go).
	Demand extraDemand
	// ByPrio is, per queue and pod priority, what bound pods request: what
	// preemption within the queue could free for a higher priority.
	ByPrio map[string]map[int32]resources.List
	Used   resources.List
	// Outside is what bound pods in no queue request: other schedulers'
	// pods and the ones Caldera does not queue. Fair share divides only
	// what the queues can have, the allocatable less this.
	Outside resources.List
	Shares  *queue.Shares
	Sorting map[string]queueSort
	// held names the queues that hold placement (hold.go).
	held map[string]bool
	Kick chan struct{}
	// deficitRefused holds the admission units PreFilter refused for a
	// capability deficit (deficit.go), activated when a bound pod leaves.
	deficitRefused map[queue.Key]struct{}
	// Ends holds the bound pods with a run-time limit (timeplan.go).
	Ends map[types.UID]podEnd
	// Est is what the bound pods without a limit hold and the estimated
	// starts planned on it (estimate.go).
	Est Estimates
	// JobDeadlines are the Jobs' activeDeadlineSeconds, by Job UID, of
	// the Jobs that set one (jobdeadline.go).
	JobDeadlines map[types.UID]int64
	// freeRoomOnly holds the units admission counts no eviction room for
	// until their freeRoomUntil, or until a bound pod leaves.
	freeRoomOnly map[queue.Key]struct{}
	// Writes are the units whose admission verdict, or release, the
	// status writer is to write: it pulls them (AdmissionWrites), so
	// nothing is dropped when it falls behind, and a unit decided twice
	// between two pulls is written once, as last decided.
	Writes admissionWrites
	Quotas corelisters.ResourceQuotaLister
	// Feas is the cache's per-node room, which pod accounts feed.
	Feas *FeasibleState
	// nominated holds our unbound pods whose status names a nominated
	// node, and clearing those whose nomination is being removed
	// (noticePendingLocked).
	nominated map[types.UID]*v1.Pod
	Clearing  map[types.UID]bool
	// Overdue watches gangs admitted before their members exist (overdue.go).
	Overdue overdueState
	// Short holds the admitted gangs short of members (short.go).
	Short shortGangs
	// observeWait, when set, is told how long each unit waited for its
	// first admission (the cache's metric).
	observeWait func(queue string, wait time.Duration)
}

// On reports whether admission is on: a nil State is admission off.
func (a *State) On() bool { return a != nil }

// Ours reports whether p is scheduled by a profile that admits.
func (a *State) Ours(p *v1.Pod) bool { return a.profiles[p.Spec.SchedulerName] }

// NewState returns an empty admission state for profiles, without
// informers or goroutines; observeWait is told each unit's wait for its
// first admission.
func NewState(opts Options, observeWait func(queue string, wait time.Duration), profiles ...string) *State {
	ours := make(map[string]bool, len(profiles))
	for _, p := range profiles {
		ours[p] = true
	}
	return &State{
		Opts:     opts,
		profiles: ours,
		Queues:   map[string]*qapi.Queue{},
		Tree:     queue.BuildTree(nil),
		nsQueue:  map[string]string{},
		Pending:  queue.NewPending(),
		Units:    map[queue.Key]*Unit{},
		Pods:     map[types.UID]*PodAcct{},
		UnitPods: map[queue.Key][]*PodAcct{},
		nsPods:   map[string]map[types.UID]*PodAcct{},
		Usage:    map[string]*queueUsage{},
		ByPrio:   map[string]map[int32]resources.List{},
		Used:     resources.List{},
		Outside:  resources.List{},
		Sorting:  map[string]queueSort{},
		Kick:     make(chan struct{}, 1),

		observeWait: observeWait,
	}
}

// AttachLocked ties a, just installed as the cache's admission side, to the
// cache's per-node room (feas), and makes the gangs the cache already knows
// (groups) units now; dirty and synced are as SyncGangUnitLocked takes them.
func (a *State) AttachLocked(feas *FeasibleState, groups map[gangbook.GroupKey]*gangbook.Group, dirty map[gangbook.GroupKey]struct{}, synced bool) {
	a.Feas = feas
	for _, g := range groups {
		a.SyncGangUnitLocked(g, dirty, synced)
	}
}

// observeAdmissionLocked tells observeWait of a unit's first admission.
func (a *State) observeAdmissionLocked(u *Unit, now time.Time) {
	if u.waitObserved {
		return
	}
	u.waitObserved = true
	wait := now.Sub(u.created)
	if u.created.IsZero() || wait < 0 {
		wait = 0
	}
	if a.observeWait != nil {
		a.observeWait(u.Queue, wait)
	}
}

// KickLocked asks for an admission pass soon.
func (a *State) KickLocked() {
	select {
	case a.Kick <- struct{}{}:
	default:
	}
}

// Grant is one admission of a pass, logged after the lock is let go.
type Grant struct {
	Unit         queue.Key
	Queue        string
	OnPlan, Lent bool
}

// QueueUsageLocked is what each queue holds, reserves and asks for, as the
// shares are divided on: pending groups' requests and started gangs' waiting
// members as demand; bound pods, and extras reserved on a node, as held.
// O(queues).
func (a *State) QueueUsageLocked() map[string]queue.Usage {
	usage := make(map[string]queue.Usage, len(a.Usage))
	for _, name := range a.Pending.Queues() {
		usage[name] = queue.Usage{Pending: a.Pending.PendingRequest(name)}
	}
	for name, l := range a.Demand.ByQueue {
		us := usage[name]
		us.Pending = l.Clone().Add(us.Pending)
		usage[name] = us
	}
	for name, u := range a.Usage {
		us := usage[name]
		us.Allocated, us.Inflight = u.Allocated, u.Inflight
		usage[name] = us
	}
	// Extras reserved on a node (waiting in Permit, or binding) hold room
	// as bound pods do, and the share check of the next extra counts them
	// as held (shareUseLocked): they are the queue's demand too. Left out,
	// a gang re-forming from replacements got a share for the member still
	// waiting and none for the one reserved, and the waiting one was
	// refused until Permit's timeout released both.
	for name, l := range a.Extras.byQueue {
		us := usage[name]
		us.Allocated = l.Clone().Add(us.Allocated)
		usage[name] = us
	}
	return usage
}

// admitOptionsLocked are the pass's options: the profile's, the cache's
// eviction settings (reclaim, preempt: CalderaReclaim runs them) and the
// quota check, and the placement check pl.
func (a *State) admitOptionsLocked(pl *passPlacement, reclaim, preempt bool) queue.Options {
	opts := queue.Options{
		OvercommitFactor:     a.Opts.OvercommitFactor,
		StarvationThreshold:  a.Opts.StarvationThreshold,
		Reclaim:              reclaim,
		Lend:                 a.Opts.LendIdleRoom,
		ReservationsPerQueue: a.Opts.ReservationsPerQueue,
		Placement:            pl,
	}
	if preempt {
		opts.Preemptible = a.preemptibleLocked
	}
	if a.Quotas != nil {
		opts.Quota = a.quotaCheckLocked()
	}
	return opts
}

// admitLocked records the pass's admission of u on decision d: it reserves
// its request, its status is to be written, and its waiting pods are added
// to act, to be moved to the active queue; a gang's is marked in dirty, the
// cache's set of groups whose status is to be written. O(members).
func (a *State) admitLocked(u *Unit, d queue.Decision, now time.Time, act map[string]*v1.Pod, dirty map[gangbook.GroupKey]struct{}) {
	u.Admitted, u.OnPlan, u.failedFit, u.roomVerdict = true, d.OnPlan, false, nil
	if u.Gang != nil {
		u.noteAdmittedSpec(u.Gang)
	}
	a.observeAdmissionLocked(u, now)
	a.setInflightLocked(u)
	if u.Gang != nil {
		dirty[u.Gang.Key] = struct{}{}
		if u.Gang.Enqueueable {
			maps.Copy(act, u.Gang.PendingPodsLocked())
		}
	} else if u.Pod.Spec.NodeName == "" {
		act[u.Pod.Namespace+"/"+u.Pod.Name] = u.Pod
	}
	// A singleton admitted without having waited gets no Event: its
	// Scheduled Event follows at once, and a backlog of plain pods would
	// otherwise post one Event per pod at the same moment, which stalls
	// binds behind new API connections. One that was told NotAdmitted is
	// told it may go, and so is one admitted on lent room: it is the first
	// a reclaim will evict, and only a contended queue borrows, so these
	// Events are few.
	msg := "admitted to queue " + u.Queue
	if d.Lent {
		msg = d.Message()
	}
	if u.Gang != nil || u.told() || d.Lent {
		a.noteLocked(u, true, queue.CheckNone, "", msg, now, dirty)
	}
}

// VerdictRefresh is how long a refused unit's written verdict stands while
// a new verdict differs from it only in its numbers (same check, queue and
// resource: "remaining capability 0" becoming "1"). Each rewrite of a
// verdict writes an Event, the PodGroup's annotation and the
// PodScheduled condition of every waiting pod, and the numbers move with
// every bind and completion in the queue: written at once, a backlog of a
// thousand pods would be rewritten a thousand times per completion. A
// change of check (capability to fair share, say) or an admission is
// written at once; the deferred numbers are written by the first period
// after this has passed, so the last numbers always land.
const VerdictRefresh = 30 * time.Second

// noteLocked queues the Event (and annotation) for a decision, once per
// change, with the unit's pods that wait for a node: the writer tells them
// the verdict in their PodScheduled condition. stage names a refusal's
// check, queue and resource ("" for an admission): a refusal at the stage
// already written waits for VerdictRefresh; a gang's verdict marks it in
// dirty, the cache's set of groups whose status is to be written.
// O(members).
func (a *State) noteLocked(u *Unit, admitted bool, check queue.Check, stage, msg string, now time.Time, dirty map[gangbook.GroupKey]struct{}) {
	id := fmt.Sprint(admitted, msg)
	if s, ok := a.Est.Starts[u.Key]; ok && !admitted {
		// Not in the message, but written with it (the PodGroup's
		// estimated-start annotation).
		id = fmt.Sprint(id, "@", s)
	}
	n := u.notice
	if n != nil && n.id == id {
		return
	}
	if !admitted && u.told() && stage == n.stage && now.Sub(n.at) < VerdictRefresh {
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
	if u.Gang != nil {
		// A Volcano PodGroup's status carries the verdict (volcano.go).
		dirty[u.Gang.Key] = struct{}{}
	}
	a.Writes.verdict(u.Key, admitted, check, msg)
}

// NoticePendingLocked queues a NotAdmitted Event for every pending group whose
// admission verdict changed. It runs on the status leader's period, not in the
// pass: a queue that stops (missing, closed) leaves verdicts on groups the
// pass never examined. dirty is the cache's set of groups whose status is to
// be written. O(pending groups); the Event is written once per change.
func (a *State) NoticePendingLocked(now time.Time, dirty map[gangbook.GroupKey]struct{}) {
	a.clearStaleNominationsLocked()
	for key, u := range a.Units {
		if u.Admitted {
			continue
		}
		d, ok := a.Pending.Decision(key)
		// A gang short of members is told so by CalderaGang, unless its
		// promise of members was withdrawn (overdue.go): nothing else
		// says why it lost its admission.
		overdue := u.Gang != nil && u.Gang.OverdueWhy != ""
		if !ok || d.Check == queue.CheckNone || d.Check == queue.CheckMembers && !overdue {
			continue
		}
		a.noteLocked(u, false, d.Check, a.verdictStage(u, d), a.decisionMessage(u, d), now, dirty)
	}
}

// verdictStage is what a refusal's verdict says apart from its numbers:
// a new or moved reservation or estimated start is news too, told at once
// (a published estimate moves only by more than a minute: steady).
func (a *State) verdictStage(u *Unit, d queue.Decision) string {
	t, _ := a.Feas.ReservationOf(u.Key)
	return fmt.Sprint(d.Check, "/", d.Queue, "/", d.Resource, "/", d.Permanent, "/", t.Start, "/", a.Est.Starts[u.Key])
}

// AdmittedLocked is Admitted, with pod's unit (nil when it has none);
// groups are the cache's groups by key. O(1).
func (a *State) AdmittedLocked(pod *v1.Pod, groups map[gangbook.GroupKey]*gangbook.Group) (bool, string, *Unit) {
	key, labelled := gangbook.GroupKeyOf(pod)
	var uk queue.Key
	if labelled {
		if g := groups[key]; g == nil || g.Obj == nil {
			// CalderaGang says what the pod waits for.
			return true, "", nil
		}
		uk = GangUnitKey(key)
	} else {
		if !a.Opts.AdmitSingletons {
			return true, "", nil
		}
		uk = PodUnitKey(pod)
	}
	u := a.Units[uk]
	if u == nil {
		return false, "waiting for admission", nil
	}
	if u.Admitted {
		if msg := a.heldMessage(u, pod); msg != "" {
			return false, msg, u
		}
		return true, "", u
	}
	if d, ok := a.Pending.Decision(uk); ok {
		return false, a.decisionMessage(u, d), u
	}
	return false, "waiting for admission", u
}

// trackNominationLocked keeps a.nominated current for one pod event. O(1).
func (a *State) trackNominationLocked(pod *v1.Pod, deleted bool) {
	if !deleted && pod.Spec.NodeName == "" && pod.Status.NominatedNodeName != "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed && a.Ours(pod) {
		if a.nominated == nil {
			a.nominated = map[types.UID]*v1.Pod{}
		}
		if a.nominated[pod.UID] != pod {
			// A new version: a write for the old one fails its
			// resourceVersion precondition, so this one is decided anew.
			delete(a.Clearing, pod.UID)
			a.Writes.forgetPod(pod.UID)
		}
		a.nominated[pod.UID] = pod
		return
	}
	delete(a.nominated, pod.UID)
	delete(a.Clearing, pod.UID)
	a.Writes.forgetPod(pod.UID)
}

// clearStaleNominationsLocked queues the removal of the nominated node of
// every pod whose unit is not admitted. Such a pod is gated in PreEnqueue,
// so it runs no scheduling cycle that would use or drop the nomination, yet
// kube-scheduler keeps counting the room it names as taken for every pod of
// lower priority: a gang that lost its admission (or a pod preempted for
// before a restart and refused since) held that room for as long as it
// waited. O(nominated pods).
func (a *State) clearStaleNominationsLocked() {
	for uid, pod := range a.nominated {
		acct := a.Pods[uid]
		if acct == nil || a.Clearing[uid] {
			continue
		}
		if u := a.Units[acct.Unit]; u == nil || u.Admitted {
			continue
		}
		a.Writes.clearNomination(pod)
		if a.Clearing == nil {
			a.Clearing = map[types.UID]bool{}
		}
		a.Clearing[uid] = true
	}
}
