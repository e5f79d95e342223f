// Package gang is the CalderaGang plugin: all-or-nothing scheduling of the pods
// of a PodGroup. It is a thin adapter: the state lives in pkg/cache and the
// rules in pkg/gang; this package turns them into framework statuses.
package gang

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	policy "github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaGang"

// Gang implements PreEnqueue, PreFilter, PostFilter, Reserve and Permit for gangs.
type Gang struct {
	handle        fwk.Handle
	cache         groups
	plans         gangPlans
	backoff       policy.Backoff
	permitTimeout time.Duration
}

// groups is what the plugin asks of and tells the shared cache
// (*cache.Cache); the plugin's tests give it a fake.
type groups interface {
	// Enqueueable: the pod's PodGroup exists and has its minimum of members.
	Enqueueable(pod *v1.Pod) (isMember, ok bool, msg string)
	// PreFilter: the pod's unit is neither backing off, nor larger than the
	// cluster, nor past its queue's capability.
	PreFilter(pod *v1.Pod, at time.Time) (isMember bool, code admission.PreFilterCode, msg string)
	// ReleaseSingleton returns a pod outside any gang, admitted on room
	// that only evictions free, to its queue's pending units.
	ReleaseSingleton(pod *v1.Pod, at time.Time) bool
	// Unschedulable releases the pod's gang: it backs off and returns to
	// its queue's pending groups.
	Unschedulable(logger klog.Logger, pod *v1.Pod, at time.Time, backoff policy.Backoff, reason string)
	// RejectWaiting rejects the gang's members waiting in Permit.
	RejectWaiting(pod *v1.Pod, msg string)
	Reserve(pod *v1.Pod)
	Unreserve(logger klog.Logger, pod *v1.Pod, at time.Time, backoff policy.Backoff, defaultTimeout time.Duration)
	Permit(logger klog.Logger, pod *v1.Pod, at time.Time, defaultTimeout time.Duration, pluginName string) cache.PermitResult
}

// gangPlans is what the plugin asks of the evictions in flight
// (cache.Evictions); the plugin's tests give it a fake.
type gangPlans interface {
	// GangPlan: a reclaim or preemption plan is evicting for the pod's
	// gang (or the pod), and the node it freed for the pod.
	GangPlan(pod *v1.Pod) (node string, inFlight bool)
}

var (
	_ groups    = (*cache.Cache)(nil)
	_ gangPlans = cache.Evictions{}
)

var (
	_ fwk.PreEnqueuePlugin  = &Gang{}
	_ fwk.PreFilterPlugin   = &Gang{}
	_ fwk.PostFilterPlugin  = &Gang{}
	_ fwk.ReservePlugin     = &Gang{}
	_ fwk.PermitPlugin      = &Gang{}
	_ fwk.EnqueueExtensions = &Gang{}
	_ fwk.SignPlugin        = &Gang{}
)

// New builds the plugin for one profile; every profile shares the cache of p.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	var a Args
	if err := args.Load(Name, obj, &a); err != nil {
		return nil, err
	}
	// GetForGang: the barrier alone does not change how the profile's pods
	// are ordered (a default-scheduler profile with it stays plain).
	c, err := p.GetForGang(ctx, h)
	if err != nil {
		return nil, err
	}
	// This plugin's Reserve and Permit tell the cache where the profile's
	// members are assumed; CalderaGangPlacement relies on that per profile.
	if err := p.TrackReservations(h.ProfileName()); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := p.EnableStatus(h.ProfileName(), cache.ReconcilerOptions{SyncPeriod: seconds(a.StatusSyncPeriodSeconds)}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Gang{
		handle:        h,
		cache:         c,
		plans:         c.Evictions(),
		backoff:       policy.Backoff{Base: seconds(a.PodGroupBackoffSeconds), Max: seconds(a.PodGroupMaxBackoffSeconds)},
		permitTimeout: seconds(a.PermitWaitingTimeSeconds),
	}, nil
}

// Name returns the plugin name.
func (g *Gang) Name() string { return Name }

// PreEnqueue keeps a member out of the active queue until its PodGroup exists
// and has at least minMember members.
func (g *Gang) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if _, ok, msg := g.cache.Enqueueable(pod); !ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	}
	return nil
}

// PreFilter rejects members of a group that is backing off or that needs more
// than the whole cluster's allocatable.
//
// A member beyond its gang's minimum is also refused while its queue or an
// ancestor has no room left under its capability, or while the gang's
// minimum is not bound yet. UnschedulableAndUnresolvable: evicting pods on
// a node cannot help, so neither preemption nor reclaim plans for it; the
// pod is retried when an assigned pod goes away or a sibling binds (see
// EventsToRegister), and PostFilter does not release its gang.
//
// A gang's minimum (or a pod outside any gang) admitted on room that
// evictions in its queue or subtree would free is refused as Unschedulable
// while placing it would take a queue past its capability: every PreFilter
// still runs (upstream runs them all after an Unschedulable, for
// preemption), and CalderaReclaim plans the evictions that free the room.
func (g *Gang) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	member, code, msg := g.cache.PreFilter(pod, time.Now())
	if code == admission.PreFilterAwaitingRoom {
		// Refused admission for want of room: Unschedulable, the reason a
		// cluster autoscaler acts on. Evictions cannot help a unit not
		// admitted, and PostFilter does not release the gang: it holds
		// nothing.
		state.Write(awaitingRoomKey, awaitingRoom{})
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	}
	if code == admission.PreFilterNotAdmitted {
		// A refusal for room let the pod into the scheduling queue; a later
		// pass refused its unit for a reason no room cures, and PreEnqueue
		// does not see the pod again until it leaves the queue. PostFilter
		// sends back any sibling that got to Permit meanwhile.
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	}
	if code == admission.PreFilterCapabilityDeficit {
		state.Write(deficitKey, deficitRefused{msg: msg})
		klog.FromContext(ctx).V(4).Info("Member waits for room under its queue's capability", "pod", klog.KObj(pod), "reason", msg)
		return nil, fwk.NewStatus(fwk.Unschedulable, msg)
	}
	if !member || code == admission.PreFilterOK {
		return nil, nil
	}
	if code == admission.PreFilterOverCapability || code == admission.PreFilterOverShare || code == admission.PreFilterExtraEarly {
		state.Write(extraKey, extraRefused{})
	}
	klog.FromContext(ctx).V(4).Info("Gang member rejected in PreFilter", "pod", klog.KObj(pod), "reason", msg)
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
}

// awaitingRoomKey marks a cycle whose pod PreFilter refused because its
// unit was refused admission for capacity: PostFilter leaves the gang be.
const awaitingRoomKey fwk.StateKey = Name + "/awaiting-room"

type awaitingRoom struct{}

func (awaitingRoom) Clone() fwk.StateData { return awaitingRoom{} }

// extraKey marks a cycle whose member PreFilter refused as a member beyond
// its gang's minimum: the gang has its minimum placed, so PostFilter must
// not reject the siblings waiting in Permit.
const extraKey fwk.StateKey = Name + "/extra"

type extraRefused struct{}

func (extraRefused) Clone() fwk.StateData { return extraRefused{} }

// deficitKey marks a cycle whose pod PreFilter refused because its unit's
// minimum would take a queue past its capability; msg says how far.
const deficitKey fwk.StateKey = Name + "/deficit"

type deficitRefused struct{ msg string }

func (d deficitRefused) Clone() fwk.StateData { return d }

// SignPod contributes nothing to the pod's scheduling signature, so the
// profile keeps kube-scheduler's opportunistic batching (KEP-5598, on by
// default since 1.35): a PreFilter or Filter plugin that does not sign turns
// it off for every pod of the profile. CalderaGang may fail a pod in
// PreFilter, which still runs every cycle, but never restricts or scores
// nodes, so pods' node feasibility and scores do not depend on it.
func (g *Gang) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// PreFilterExtensions returns nil: the plugin has no per-node state to update.
func (g *Gang) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a member fits no node and CalderaReclaim (configured
// before it) made no plan: the gang cannot complete now, so its waiting
// members are rejected (it holds nothing), it backs off and returns to its
// queue's pending groups. It never nominates a node. While a plan of the
// gang's is still evicting, it releases nothing.
func (g *Gang) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if _, err := state.Read(awaitingRoomKey); err == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, "waiting for room in the cluster")
	}
	d, deficit := readDeficit(state)
	if _, ok := gangbook.GroupKeyOf(pod); !ok {
		// Admitted over capability, or on room only evictions free, and
		// CalderaReclaim made no plan: the pod goes back to its queue's
		// pending units, like a released gang.
		if _, inFlight := g.plans.GangPlan(pod); !inFlight && g.cache.ReleaseSingleton(pod, time.Now()) {
			klog.FromContext(ctx).V(3).Info("Pod released to its queue: no plan frees the room it was admitted on", "pod", klog.KObj(pod), "capability", d.msg)
			return clearNomination(), fwk.NewStatus(fwk.Unschedulable, "released to its queue: no plan frees the room it was admitted on")
		}
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if deficit {
		if _, inFlight := g.plans.GangPlan(pod); inFlight {
			return nil, fwk.NewStatus(fwk.Unschedulable, "waiting for the victims of the gang's plan to leave its queue's capability")
		}
		// No plan frees the room its admission counted on: the gang holds
		// nothing, backs off and is decided again.
		g.cache.Unschedulable(klog.FromContext(ctx), pod, time.Now(), g.backoff, d.msg)
		return clearNomination(), fwk.NewStatus(fwk.Unschedulable, "gang released")
	}
	if _, err := state.Read(extraKey); err == nil {
		// A member beyond the minimum waits for room under its queue's
		// capability or share: the gang has started and is neither
		// released nor backed off. Nor does the member keep a nomination
		// an earlier cycle's plan left it: that would hold the node
		// against every pod of lower priority for as long as its queue
		// has no room for it. A plan still evicting for it keeps it.
		if _, inFlight := g.plans.GangPlan(pod); inFlight {
			return nil, fwk.NewStatus(fwk.Unschedulable)
		}
		return clearNomination(), fwk.NewStatus(fwk.Unschedulable)
	}
	summary, ours := g.summarize(statuses)
	if ours != "" {
		// Our own PreFilter refused the pod, and recorded why. A backing-off
		// gang holds nothing; a gang that outgrew the cluster may have
		// siblings that got through a moment earlier, and they must not hold
		// nodes until their timeout.
		g.cache.RejectWaiting(pod, ours)
		return clearNomination(), fwk.NewStatus(fwk.Unschedulable)
	}
	if _, inFlight := g.plans.GangPlan(pod); inFlight {
		// CalderaReclaim (before this plugin) is evicting for the gang:
		// the member only waits for the victims to leave. Releasing would
		// reject the siblings holding nodes in Permit, whose room the plan
		// relies on, and back off the gang the room is being freed for.
		return nil, fwk.NewStatus(fwk.Unschedulable, "waiting for the victims of the gang's reclaim plan to leave")
	}
	g.cache.Unschedulable(klog.FromContext(ctx), pod, time.Now(), g.backoff, summary)
	return clearNomination(), fwk.NewStatus(fwk.Unschedulable, "gang released")
}

func readDeficit(state fwk.CycleState) (deficitRefused, bool) {
	v, err := state.Read(deficitKey)
	if err != nil {
		return deficitRefused{}, false
	}
	d, ok := v.(deficitRefused)
	return d, ok
}

// clearNomination is the PostFilter result that drops the pod's nominated
// node. A member of a released gang (or of one backing off) holds nothing,
// and that includes the room a nomination holds: an earlier preemption's
// nomination kept in the pod's status, or the plan's nominations of its
// siblings, would otherwise keep pods of lower priority off those nodes
// ("Insufficient cpu" on nodes the API shows free) for as long as the gang
// cannot complete. The framework keeps the last non-noop result of the
// PostFilter plugins, so a plan's nomination from CalderaReclaim (which runs
// before this plugin) is only replaced when the gang is released.
func clearNomination() *fwk.PostFilterResult {
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride}}
}

// summarize renders why the pod fit no node, like the scheduler's FitError.
// When the rejection was this plugin's own PreFilter's it returns that
// message as ours instead.
func (g *Gang) summarize(statuses fwk.NodeToStatusReader) (summary, ours string) {
	nodes, err := g.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return "no node fits", ""
	}
	reasons := map[string]int{}
	for _, n := range nodes {
		st := statuses.Get(n.Node().Name)
		if st == nil || st.IsSuccess() {
			continue
		}
		if st.Plugin() == Name {
			return "", st.Message()
		}
		for _, r := range st.Reasons() {
			reasons[r]++
		}
	}
	return policy.SummarizeReasons(len(nodes), reasons), ""
}

// Reserve records that the member holds a node.
func (g *Gang) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	g.cache.Reserve(pod)
	return nil
}

// Unreserve runs when a reserved member is rejected, times out in Permit or
// fails to bind: the whole gang lets go of its nodes and backs off.
func (g *Gang) Unreserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	g.cache.Unreserve(klog.FromContext(ctx), pod, time.Now(), g.backoff, g.permitTimeout)
}

// Permit holds a member until minMember members of its gang hold nodes, then
// lets every waiting sibling through together.
func (g *Gang) Permit(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	r := g.cache.Permit(klog.FromContext(ctx), pod, time.Now(), g.permitTimeout, Name)
	if r.Allow {
		return nil, 0
	}
	return fwk.NewStatus(fwk.Wait, r.Message), r.Timeout
}

// EventsToRegister lists the events that can make a gated or rejected member
// schedulable, each with a hint that requeues only the pods the event concerns.
func (g *Gang) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A new member may complete a gang's minMember.
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add}, QueueingHintFn: sameGroupPod},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Add}, QueueingHintFn: sameGroupPod},
		// A pod relabelled into the group is a new member.
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodLabel}, QueueingHintFn: sameGroupPod},
		// A bound pod going away frees room that a released gang may need.
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: queueAlways},
		// PodGroup events are not registered: the cache activates a gang's
		// members itself when its PodGroup appears or its spec changes
		// (Cache.onPodGroup). Registered, every PodGroup update (each
		// status write) would make kube-scheduler keep a second, untyped
		// copy of every PodGroup and run this plugin's hint over every
		// unschedulable pod.
		// More nodes or allocatable can make a too-large gang fit the cluster.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}, QueueingHintFn: queueAlways},
	}, nil
}

func queueAlways(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) {
	return fwk.Queue, nil
}

func sameGroupPod(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	_, added, err := schedutil.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	want, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return fwk.QueueSkip, nil
	}
	if got, ok := gangbook.GroupKeyOf(added); ok && got == want {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
