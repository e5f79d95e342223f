// Package reclaim is the CalderaReclaim plugin: Volcano's reclaim (across
// queues) and preempt (within a queue) actions as a kube-scheduler PostFilter
// that replaces DefaultPreemption. Victims are chosen by pkg/reclaim from the
// scheduler's snapshot and Caldera's queue accounting; the upstream
// preemption Evaluator and Executor re-check the scheduler's filters on the
// chosen node, consult extenders, nominate the node and evict (DisruptionTarget
// condition, asynchronous when SchedulerAsyncPreemption is on).
package reclaim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
	policy "github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaReclaim"

// Event reasons on victim pods and their PodGroups.
const (
	ReasonReclaimed = "Reclaimed"
	ReasonPreempted = "Preempted"
)

// Reclaim implements PostFilter (and PreEnqueue, to hold a preemptor while
// its asynchronous evictions run).
type Reclaim struct {
	handle    fwk.Handle
	cache     evictionCache
	opts      policy.Options
	fts       feature.Features
	executor  *preemption.Executor
	evaluator *preemption.Evaluator

	mu sync.Mutex
	// plans holds the decision for a preemptor while the Evaluator runs it.
	// The evictions in flight are in the cache, shared by every profile.
	plans map[types.UID]*plan
}

// evictionCache is what the plugin reads from and tells the shared cache
// (*cache.Cache): the queue accounting a decision needs, and the evictions
// in flight, shared by every profile. The plugin's tests give it a fake.
type evictionCache interface {
	// ReclaimInput is the decision's input for preemptor over running,
	// or why it may not preempt.
	ReclaimInput(preemptor *v1.Pod, running []*v1.Pod, leaving func(*v1.Pod) bool) (policy.Input, bool, string)
	EvictionsInFlight(pods []*v1.Pod) map[types.UID]bool
	GangPlanInFlight(pod *v1.Pod) (node string, inFlight bool)
	StartEvictions(evs []cache.Eviction, now time.Time) bool
	AbandonEvictions(preemptor types.UID, victims []types.UID)
	FinishEviction(preemptor, victim types.UID, err error) (cache.Eviction, bool)
	HoldForGang(group string, nodes map[types.UID]string)
	// GangMemberPod is the member uid of pod's gang, nil when unknown.
	GangMemberPod(pod *v1.Pod, uid types.UID) *v1.Pod
	GroupSourceOf(pod *v1.Pod) *groupspec.Source
}

var _ evictionCache = (*cache.Cache)(nil)

// plan is a decision being carried out for one preemptor.
type plan struct {
	node    string
	victims []*v1.Pod
	mode    policy.Mode
	// leaving are the pods on the planned node already on their way out
	// (terminating, or evicted for an earlier plan): the plan counted their
	// room as becoming free, so the filters are re-run without them too.
	leaving map[types.UID]bool
	// group is the preemptor's gang ("" for a singleton) and members the
	// node the plan freed for each of its members that holds none.
	group   string
	members map[types.UID]string
	// at is node's index among the potential nodes (those that failed
	// the filters as Unschedulable), of which there were potential: where
	// the Evaluator's dry run starts (GetOffsetAndNumCandidates).
	at, potential int32
}

var (
	_ fwk.PostFilterPlugin  = &Reclaim{}
	_ fwk.PreEnqueuePlugin  = &Reclaim{}
	_ fwk.EnqueueExtensions = &Reclaim{}
	_ preemption.Interface  = &Reclaim{}
)

// New builds the plugin for one profile; every profile shares the cache of p.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	var a Args
	if err := args.Load(Name, obj, &a); err != nil {
		return nil, err
	}
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	c.EnableEvictions(*a.EnableReclaim, *a.EnablePreemption)
	registerMetrics()
	pl := &Reclaim{
		handle: h,
		cache:  c,
		opts:   policy.Options{Reclaim: *a.EnableReclaim, Preempt: *a.EnablePreemption, MinRuntime: a.minRuntime()},
		fts:    feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate),
		plans:  map[types.UID]*plan{},
	}
	pl.executor = preemption.NewExecutor(h, pl.fts)
	evict := pl.executor.PreemptPod
	pl.executor.PreemptPod = func(ctx context.Context, c preemption.Candidate, pre preemption.ExecutorPreemptor, victim *v1.Pod, plugin string) (bool, error) {
		inMemory, err := evict(ctx, c, pre, victim, plugin)
		pl.evicted(ctx, pre.UID(), victim, err)
		return inMemory, err
	}
	pl.evaluator = preemption.NewEvaluator(Name, h, pl, pl.executor)
	return pl, nil
}

// Name returns the plugin name.
func (pl *Reclaim) Name() string { return Name }

// PostFilter runs when pod fits no node: it plans evictions that let pod's
// whole group fit and hands the plan to the upstream Evaluator, which
// re-runs the filters on the planned node, nominates it and evicts.
func (pl *Reclaim) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	if node, inFlight := pl.cache.GangPlanInFlight(pod); inFlight {
		// The gang's plan is still evicting: planning again would count
		// the room its victims are freeing as used and evict more. The
		// member keeps (or gets) the node the plan freed for it, so that no
		// other pod takes that room, and is retried as the victims leave.
		attempts.WithLabelValues("waiting").Inc()
		st := fwk.NewStatus(fwk.Unschedulable, "reclaim: waiting for the victims of the gang's plan to leave")
		if node == "" {
			return nil, st
		}
		return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node}}, st
	}
	if ok, msg := pl.mayPreempt(pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		// As upstream's Evaluator: a pod that may not preempt (now) keeps
		// its nominated node, e.g. while the victims evicted for it on
		// that node still terminate.
		attempts.WithLabelValues("none").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, "reclaim: "+msg)
	}
	p, why := pl.plan(ctx, state, pod, m)
	if p == nil {
		attempts.WithLabelValues("none").Inc()
		logger.V(4).Info("No reclaim or preemption", "pod", klog.KObj(pod), "reason", why)
		// No plan: the pod's nominated node, if any, is dropped, as
		// upstream's Evaluator drops it when preemption cannot help. Kept,
		// a nomination from an earlier plan (or an earlier process) goes on
		// holding that room against every pod of lower priority while this
		// pod cannot use it (seed 179 of the randomized harness: a gang's
		// extra, refused for its queue's capability, kept a node empty).
		return framework.NewPostFilterResultWithNominatedNode(""), fwk.NewStatus(fwk.Unschedulable, "reclaim: "+why)
	}
	pl.mu.Lock()
	pl.plans[pod.UID] = p
	pl.mu.Unlock()
	defer func() {
		pl.mu.Lock()
		delete(pl.plans, pod.UID)
		pl.mu.Unlock()
	}()

	result, status := pl.evaluator.Preempt(ctx, state, pod, m)
	if !status.IsSuccess() {
		pl.abandon(pod, p)
		attempts.WithLabelValues("filtered").Inc()
		logger.V(3).Info("Planned victims do not make room", "pod", klog.KObj(pod), "node", p.node, "status", status.Message())
		// Unschedulable whatever the Evaluator's code: CalderaGang runs
		// after this plugin and must still release a gang that got no
		// plan, which an Error or UnschedulableAndUnresolvable would skip.
		return result, fwk.NewStatus(fwk.Unschedulable, "reclaim: "+status.Message())
	}
	attempts.WithLabelValues(p.mode.String()).Inc()
	logger.V(2).Info("Evicting for a group that does not fit", "pod", klog.KObj(pod), "action", p.mode.String(), "node", p.node, "victims", len(p.victims))
	pl.holdForGang(ctx, pod, p)
	return result, status
}

// holdForGang gives every other member of pod's gang the room the plan
// freed for it: the cache remembers the node (a member that fails Filter
// while the victims leave is nominated there again, see PostFilter), and
// the member is nominated to it in the scheduler's memory now, so that
// until the gang binds no pod of lower or equal priority takes the room.
// The pod itself is nominated by the Evaluator.
func (pl *Reclaim) holdForGang(ctx context.Context, pod *v1.Pod, p *plan) {
	if p.group == "" || len(p.members) == 0 {
		return
	}
	pl.cache.HoldForGang(p.group, p.members)
	logger := klog.FromContext(ctx)
	for uid, node := range p.members {
		if uid == pod.UID {
			continue
		}
		sib := pl.cache.GangMemberPod(pod, uid)
		if sib == nil || sib.Spec.NodeName != "" {
			continue
		}
		pi, err := framework.NewPodInfo(sib)
		if err != nil {
			continue
		}
		pl.handle.AddNominatedPod(logger, pi, &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node})
	}
}

// plan decides the victims for pod, or says why there are none.
func (pl *Reclaim) plan(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*plan, string) {
	lister := pl.handle.SnapshotSharedLister().NodeInfos()
	nodes, err := lister.List()
	if err != nil {
		return nil, err.Error()
	}
	potential, err := m.NodesForStatusCode(lister, fwk.Unschedulable)
	if err != nil {
		return nil, err.Error()
	}
	if len(potential) == 0 {
		return nil, "evicting pods would not help on any node"
	}
	eligible := make(map[string]bool, len(potential))
	for _, n := range potential {
		eligible[n.Node().Name] = true
	}
	size := 0
	for _, n := range nodes {
		size += len(n.GetPods())
	}
	running := make([]*v1.Pod, 0, size)
	for _, n := range nodes {
		for _, pi := range n.GetPods() {
			running = append(running, pi.GetPod())
		}
	}
	leaving := pl.cache.EvictionsInFlight(running)
	in, ok, why := pl.cache.ReclaimInput(pod, running, func(p *v1.Pod) bool { return leaving[p.UID] })
	if !ok {
		return nil, why
	}
	if len(in.Deficits) > 0 {
		// CalderaGang's PreFilter failed the pod for its queue's
		// capability, so every node carries that one status. Which nodes
		// the pod may use (now, or once room is made) is found by running
		// the filters on each, as upstream's dry run does.
		eligible = pl.usable(ctx, state, pod, nodes)
	}
	pl.markBudgets(&in, running)
	in.Nodes = make([]policy.Node, len(nodes))
	gone := map[types.UID]bool{}
	for i, n := range nodes {
		free := roomFor(pod, in.Preemptor.Group != "", n, pl.handle.NominatedPodsForNode(n.Node().Name), leaving, gone)
		in.Nodes[i] = policy.Node{Name: n.Node().Name, Free: free, Eligible: eligible[n.Node().Name]}
	}
	in.Options = pl.opts
	in.Options.Now = time.Now()
	decided, ok, why := policy.Decide(in)
	if !ok {
		return nil, why
	}
	p, ok := pl.start(pod, in, decided, running)
	if !ok {
		return nil, "the chosen victims are being evicted for another pod already"
	}
	p.leaving = gone
	p.potential = int32(len(potential))
	for i, n := range potential {
		if n.Node().Name == decided.Node {
			p.at = int32(i)
			break
		}
	}
	klog.FromContext(ctx).V(4).Info("Reclaim plan", "pod", klog.KObj(pod), "action", decided.Mode.String(), "node", decided.Node, "victims", len(p.victims))
	return p, ""
}

// usable returns the nodes where the scheduler's filters pass for pod, or
// fail only for a reason evictions can resolve. O(nodes x filters), as one
// scheduling cycle; it runs in PostFilter only.
func (pl *Reclaim) usable(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) map[string]bool {
	out := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		st := pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, n)
		if st.IsSuccess() || st.Code() == fwk.Unschedulable {
			out[n.Node().Name] = true
		}
	}
	return out
}

// roomFor is the room node n offers pod's plan: its free room, plus what
// the pods already leaving it (terminating, or in leaving: evicted for an
// earlier plan) hold, minus what is nominated to it. The leaving pods are
// added to gone. inGang: pod is a member of a gang, whose nominated members
// are not subtracted.
//
// A leaving pod's room is the room of the preemptor it is evicted for, who
// is nominated here and subtracted: counted as used as well, every later
// preemptor would evict for it a second time. Room nominated to other pods
// is not free, or the next preemptor would count it and evict nothing; like
// the scheduler's filters, only pods of at least pod's priority hold their
// nomination. The pod's own gang is not subtracted: its members are the
// plan's members already.
func roomFor(pod *v1.Pod, inGang bool, n fwk.NodeInfo, nominated []fwk.PodInfo, leaving, gone map[types.UID]bool) resources.List {
	free := convert.NodeFree(n)
	for _, pi := range n.GetPods() {
		if q := pi.GetPod(); q.DeletionTimestamp != nil || leaving[q.UID] {
			free.Add(convert.PodRequest(q))
			gone[q.UID] = true
		}
	}
	if len(nominated) == 0 {
		return free // most nodes: the pod's group is not needed
	}
	group, _ := cache.GroupKeyOf(pod)
	for _, np := range nominated {
		q := np.GetPod()
		if q.UID == pod.UID || corev1helpers.PodPriority(q) < corev1helpers.PodPriority(pod) {
			continue
		}
		if k, ok := cache.GroupKeyOf(q); ok && inGang && k == group {
			continue
		}
		free.Sub(convert.PodRequest(q))
	}
	return free
}

// start records a decision's evictions in the cache, where every profile
// sees them from now until the pods leave: a preemptor planning while they
// are in flight neither picks the same victims nor counts their room twice.
// It fails when another preemptor claimed one of the victims since in was
// read.
func (pl *Reclaim) start(pod *v1.Pod, in policy.Input, decided policy.Plan, running []*v1.Pod) (*plan, bool) {
	p := &plan{node: decided.Node, mode: decided.Mode, group: in.Preemptor.Group}
	if p.group != "" {
		p.members = make(map[types.UID]string, len(in.Preemptor.MemberIDs))
		for i, id := range in.Preemptor.MemberIDs {
			if i < len(decided.Placement) {
				p.members[types.UID(id)] = decided.Placement[i]
			}
		}
	}
	// The victims' pods, found by a scan for their few IDs rather than
	// an index of every running pod's "namespace/name" (one string per
	// running pod per plan: 10,000 in W7 at 5000 nodes). A namespace
	// holds no "/", so the ID's first one splits it.
	type name struct{ namespace, name string }
	want := make(map[name]*v1.Pod, len(decided.Victims))
	for _, v := range decided.Victims {
		ns, n, _ := strings.Cut(in.Pods[v].ID, "/")
		want[name{ns, n}] = nil
	}
	for found, i := 0, 0; found < len(want) && i < len(running); i++ {
		r := running[i]
		k := name{r.Namespace, r.Name}
		if v, ok := want[k]; ok && v == nil {
			want[k] = r
			found++
		}
	}
	evs := make([]cache.Eviction, 0, len(decided.Victims))
	for _, v := range decided.Victims {
		vp := in.Pods[v]
		ns, n, _ := strings.Cut(vp.ID, "/")
		victim := want[name{ns, n}]
		p.victims = append(p.victims, victim)
		evs = append(evs, cache.Eviction{Victim: victim.UID, Preemptor: pod.UID, PreemptorName: pod.Namespace + "/" + pod.Name,
			Group: in.Preemptor.Group, Mode: decided.Mode, Queue: in.Preemptor.Queue, VictimQueue: vp.Queue})
	}
	return p, pl.cache.StartEvictions(evs, in.Options.Now)
}

// mayPreempt applies DefaultPreemption's own eligibility: preemptionPolicy
// Never, and no second round while victims on the nominated node are
// still terminating.
func (pl *Reclaim) mayPreempt(pod *v1.Pod, nominatedStatus *fwk.Status) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, "not eligible due to preemptionPolicy=Never"
	}
	nom := pod.Status.NominatedNodeName
	if nom == "" || nominatedStatus.Code() == fwk.UnschedulableAndUnresolvable {
		return true, ""
	}
	if n, _ := pl.handle.SnapshotSharedLister().NodeInfos().Get(nom); n != nil {
		for _, pi := range n.GetPods() {
			if preemption.PodTerminatingByPreemption(pi.GetPod()) {
				return false, "victims on the nominated node are still terminating"
			}
		}
	}
	return true, ""
}

// markBudgets gives the decision the PodDisruptionBudgets: what each still
// allows, and which budgets cover each candidate. Each victim spends one
// disruption of every budget covering it and breaks the budget when none is
// left, as upstream's DefaultPreemption counts (filterPodsWithPDBViolation):
// a budget allowing one disruption protects all its pods but one. A pod the
// budget lists as disrupted already spends nothing.
func (pl *Reclaim) markBudgets(in *policy.Input, running []*v1.Pod) {
	pdbs, err := pl.pdbs()
	if err != nil || len(pdbs) == 0 {
		return
	}
	// Selectors are parsed once, not once per pod.
	type budget struct {
		pdb *policyv1.PodDisruptionBudget
		sel labels.Selector
	}
	var budgets []budget
	for _, pdb := range pdbs {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !sel.Empty() {
			budgets = append(budgets, budget{pdb, sel})
			in.Budgets = append(in.Budgets, pdb.Status.DisruptionsAllowed)
		}
	}
	if len(budgets) == 0 {
		return
	}
	byID := make(map[string]*v1.Pod, len(running))
	for _, p := range running {
		byID[p.Namespace+"/"+p.Name] = p
	}
	for i := range in.Pods {
		p := byID[in.Pods[i].ID]
		if p == nil || len(p.Labels) == 0 {
			continue
		}
		for b, bu := range budgets {
			if bu.pdb.Namespace != p.Namespace || !bu.sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if _, done := bu.pdb.Status.DisruptedPods[p.Name]; done {
				continue
			}
			in.Pods[i].Budgets = append(in.Pods[i].Budgets, b)
		}
	}
}

func (pl *Reclaim) pdbs() ([]*policyv1.PodDisruptionBudget, error) {
	return pl.evaluator.PdbLister.List(labels.Everything())
}

// abandon forgets the victims of pod's plan when the Evaluator did not
// carry it out.
func (pl *Reclaim) abandon(pod *v1.Pod, p *plan) {
	uids := make([]types.UID, len(p.victims))
	for i, v := range p.victims {
		uids[i] = v.UID
	}
	pl.cache.AbandonEvictions(pod.UID, uids)
}

// evicted records the outcome of one eviction for preemptor: metrics and
// the Events that name the preemptor's queue, on the victim and on its
// PodGroup.
func (pl *Reclaim) evicted(ctx context.Context, preemptor types.UID, victim *v1.Pod, err error) {
	e, ok := pl.cache.FinishEviction(preemptor, victim.UID, err)
	if !ok || err != nil {
		return
	}
	evictions.WithLabelValues(e.Mode.String(), e.VictimQueue).Inc()
	reason, msg := ReasonPreempted, fmt.Sprintf("Preempted by %s, a higher-priority group of queue %q", e.PreemptorName, e.Queue)
	if e.Mode == policy.Reclaim {
		reason = ReasonReclaimed
		msg = fmt.Sprintf("Reclaimed for %s of queue %q: queue %q holds more than its deserved share", e.PreemptorName, e.Queue, e.VictimQueue)
	}
	rec := pl.handle.EventRecorder().WithLogger(klog.FromContext(ctx))
	rec.Eventf(victim, nil, v1.EventTypeWarning, reason, "Evicting", "%s", msg)
	if src := pl.cache.GroupSourceOf(victim); src != nil {
		rec.Eventf(status.GroupRef(*src), nil, v1.EventTypeWarning, reason, "Evicting", "%s/%s: %s", victim.Namespace, victim.Name, msg)
	}
}

// GetOffsetAndNumCandidates starts the Evaluator's dry run at the planned
// node and asks for one candidate, the only one there can be: the others
// answer "not the planned node", but the dry run clones the cycle state
// and the node and lists its victims before asking, and over every node
// of W7 at 5000 nodes that was as much CPU as the plan. With one candidate
// found the dry run stops; when the planned node fails, it goes on over
// every node as before, so the answer is the same. The Evaluator lists
// the potential nodes as plan did, from the same snapshot; should the
// count differ, every node is tried from the first.
func (pl *Reclaim) GetOffsetAndNumCandidates(n int32) (int32, int32) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.plans) == 1 { // the pod in PostFilter: cycles run one at a time
		for _, p := range pl.plans {
			if p.potential == n && p.at < n {
				return p.at, 1
			}
		}
	}
	return 0, n
}

// CandidatesToVictimsMap maps each candidate node to its victims.
func (pl *Reclaim) CandidatesToVictimsMap(candidates []preemption.Candidate) map[string]*extenderv1.Victims {
	m := make(map[string]*extenderv1.Victims, len(candidates))
	for _, c := range candidates {
		m[c.Name()] = c.Victims()
	}
	return m
}

// PodEligibleToPreemptOthers: only a pod this plugin has just planned for.
func (pl *Reclaim) PodEligibleToPreemptOthers(_ context.Context, pod *v1.Pod, _ *fwk.Status) (bool, string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.plans[pod.UID] == nil {
		return false, "no reclaim plan"
	}
	return true, ""
}

// SelectVictimsOnNode returns the plan's victims when nodeInfo is the
// planned node and the scheduler's filters pass there with the victims
// gone. Victims on other nodes (the rest of a gang's room, or a victim gang
// taken whole) are returned too: the Executor evicts them all.
func (pl *Reclaim) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo, _ []*preemption.DomainVictim, pdbs []*policyv1.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	pl.mu.Lock()
	p := pl.plans[pod.UID]
	pl.mu.Unlock()
	if p == nil || nodeInfo.Node().Name != p.node {
		return nil, 0, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "not the planned node")
	}
	logger := klog.FromContext(ctx)
	here := map[types.UID]bool{}
	for _, v := range p.victims {
		if v.Spec.NodeName == p.node {
			here[v.UID] = true
		}
	}
	// The plan counted the room of pods already leaving as free; the
	// filters must see the node the same way, or every plan that relies on
	// a terminating victim's room fails here.
	var leaving []fwk.PodInfo
	for _, pi := range nodeInfo.GetPods() {
		if p.leaving[pi.GetPod().UID] && !here[pi.GetPod().UID] {
			leaving = append(leaving, pi)
		}
	}
	for _, pi := range leaving {
		if err := nodeInfo.RemovePod(logger, pi.GetPod()); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
		if st := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !st.IsSuccess() {
			return nil, 0, st
		}
	}
	// RemovePod reorders the node's pod list: pick the victims first.
	var picked []fwk.PodInfo
	for _, pi := range nodeInfo.GetPods() {
		if here[pi.GetPod().UID] {
			picked = append(picked, pi)
		}
	}
	var victims []preemption.Victim
	for _, pi := range picked {
		if err := nodeInfo.RemovePod(logger, pi.GetPod()); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
		if st := pl.handle.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo); !st.IsSuccess() {
			return nil, 0, st
		}
		victims = append(victims, preemption.NewPodVictim(pi, nil, nil))
	}
	if st := pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo); !st.IsSuccess() {
		return nil, 0, st
	}
	violating, _ := preemption.FilterVictimsWithPDBViolation(victims, pdbs)
	n := 0
	for _, v := range violating {
		n += v.ViolateCount
	}
	return p.victims, n, nil
}

// OrderedScoreFuncs: nil, the default order (one candidate at most).
func (pl *Reclaim) OrderedScoreFuncs(context.Context, map[string]*extenderv1.Victims) []func(string) int64 {
	return nil
}

// PreEnqueue holds a preemptor while its asynchronous evictions run, as
// DefaultPreemption does.
func (pl *Reclaim) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if pl.fts.EnableAsyncPreemption && pl.executor.IsPodRunningPreemption(pod.UID) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for the evictions for this pod to finish")
	}
	return nil
}

// EventsToRegister: a preemptor held by PreEnqueue is released by the
// Executor itself when its evictions finish; the event is registered only
// so that the scheduler knows this plugin can gate pods.
func (pl *Reclaim) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	if !pl.fts.EnableAsyncPreemption {
		return nil, nil
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: skip},
	}, nil
}

func skip(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) { return fwk.QueueSkip, nil }
