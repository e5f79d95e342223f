package reclaim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	policylisters "k8s.io/client-go/listers/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	policy "github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// fakeCache answers the plugin's questions from its fields.
type fakeCache struct {
	in       policy.Input
	inOK     bool
	inWhy    string
	inFlight bool
	node     string // the node GangPlan hands the pod
	leaving  map[types.UID]bool
	started  [][]admission.Eviction
}

func (f *fakeCache) ReclaimInput(*v1.Pod, []*v1.Pod, func(*v1.Pod) bool) (policy.Input, bool, string) {
	return f.in, f.inOK, f.inWhy
}
func (f *fakeCache) InFlight([]*v1.Pod) map[types.UID]bool { return f.leaving }
func (f *fakeCache) GangPlan(*v1.Pod) (string, bool)       { return f.node, f.inFlight }
func (f *fakeCache) Start(evs []admission.Eviction, _ time.Time) bool {
	f.started = append(f.started, evs)
	return true
}
func (f *fakeCache) Abandon(types.UID, []types.UID) {}
func (f *fakeCache) Finish(types.UID, *v1.Pod, error) (admission.Eviction, *groupspec.Source, bool) {
	return admission.Eviction{}, nil, false
}
func (f *fakeCache) HoldForGang(*v1.Pod, string, map[types.UID]string) map[types.UID]*v1.Pod {
	return nil
}

// fakeHandle is the part of fwk.Handle the plugin reads: the snapshot, the
// nominations, and the filters, which pass unless filter says otherwise and
// record the pods on each node they run on.
type fakeHandle struct {
	fwk.Handle
	snapshot  *internalcache.Snapshot
	nominated map[string][]fwk.PodInfo
	filter    func(n fwk.NodeInfo) *fwk.Status
	seen      [][]string
	removed   []string // pods RunPreFilterExtensionRemovePod was told of
}

func (h *fakeHandle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }
func (h *fakeHandle) NominatedPodsForNode(n string) []fwk.PodInfo {
	return h.nominated[n]
}
func (h *fakeHandle) RunFilterPluginsWithNominatedPods(_ context.Context, _ fwk.CycleState, _ *v1.Pod, n fwk.NodeInfo) *fwk.Status {
	var names []string
	for _, pi := range n.GetPods() {
		names = append(names, pi.GetPod().Name)
	}
	slices.Sort(names)
	h.seen = append(h.seen, names)
	if h.filter != nil {
		return h.filter(n)
	}
	return nil
}
func (h *fakeHandle) RunPreFilterExtensionRemovePod(_ context.Context, _ fwk.CycleState, _ *v1.Pod, pi fwk.PodInfo, _ fwk.NodeInfo) *fwk.Status {
	h.removed = append(h.removed, pi.GetPod().Name)
	return nil
}

func node(name, cpu string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourcePods: resource.MustParse("110")}}}
}

// podOn is a pod requesting cpu, bound to nodeName ("" for pending).
func podOn(name, nodeName, cpu string, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func prio(n int32) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Priority = ptr.To(n) } }
func inGroup(g string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Labels = map[string]string{gangbook.PodGroupLabel: g} }
}
func nominatedTo(n string) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.NominatedNodeName = n } }
func labelled(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Labels = map[string]string{k: v} }
}
func terminating() func(*v1.Pod) {
	return func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }
}
func preemptedByScheduler() func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		p.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
	}
}

func nodeInfo(n *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	return ni
}

func TestPostFilterWhileThePlanEvicts(t *testing.T) {
	for _, tc := range []struct {
		name, node string
	}{
		{"the member keeps the node the plan freed for it", "n2"},
		{"a member the plan placed nowhere only waits", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCache{inFlight: true, node: tc.node}
			pl := &Reclaim{handle: &fakeHandle{}, cache: f, evictions: f}
			res, st := pl.PostFilter(context.Background(), framework.NewCycleState(), podOn("m", "", "1", inGroup("g")), framework.NewDefaultNodeToStatus())
			if st.Code() != fwk.Unschedulable || st.Message() != "reclaim: waiting for the victims of the gang's plan to leave" {
				t.Errorf("status = %v %q", st.Code(), st.Message())
			}
			if tc.node == "" {
				if res != nil {
					t.Errorf("result = %+v, want none", res)
				}
				return
			}
			if res == nil || res.NominatingInfo.NominatingMode != fwk.ModeOverride || res.NominatingInfo.NominatedNodeName != tc.node {
				t.Errorf("result = %+v, want the pod nominated to %s", res, tc.node)
			}
		})
	}
}

// Every refusal is Unschedulable with the reason, prefixed (CalderaGang
// runs after this plugin and must still release a gang that got no plan).
// Without a plan the pod's nominated node is cleared, as upstream's
// Evaluator does when preemption cannot help; a pod that may not preempt
// now (its victims still terminating) keeps it.
func TestPostFilterWithoutAPlan(t *testing.T) {
	n1 := node("n1", "4")
	full := podOn("full", "n1", "4")
	unschedulable := framework.NewNodeToStatus(map[string]*fwk.Status{"n1": fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu")}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable))
	unresolvable := framework.NewNodeToStatus(map[string]*fwk.Status{"n1": fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't match selector")}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable))
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		c        fakeCache
		statuses fwk.NodeToStatusReader
		want     string
		keep     bool // the pod's nomination is left as it is (nil result)
	}{
		{"preemptionPolicy Never", podOn("p", "", "2", func(p *v1.Pod) { p.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever) }), fakeCache{inOK: true}, unschedulable,
			"reclaim: not eligible due to preemptionPolicy=Never", true},
		{"no node where evicting helps", podOn("p", "", "2"), fakeCache{inOK: true}, unresolvable,
			"reclaim: evicting pods would not help on any node", false},
		{"a stale nomination and no node where evicting helps", podOn("p", "", "2", nominatedTo("n1")), fakeCache{inOK: true}, unresolvable,
			"reclaim: evicting pods would not help on any node", false},
		{"the cache refuses the preemptor", podOn("p", "", "2"), fakeCache{inWhy: "the PodGroup is not admitted to queue q"}, unschedulable,
			"reclaim: the PodGroup is not admitted to queue q", false},
		{"a second round while the victims of the first still terminate", podOn("p", "", "2", nominatedTo("n1")), fakeCache{inOK: true}, unschedulable,
			"reclaim: victims on the nominated node are still terminating", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := []*v1.Pod{full}
			if tc.pod.Status.NominatedNodeName != "" {
				pods = append(pods, podOn("victim", "n1", "1", preemptedByScheduler()))
			}
			pl := &Reclaim{handle: &fakeHandle{snapshot: internalcache.NewSnapshot(pods, []*v1.Node{n1})}, cache: &tc.c, evictions: &tc.c, plans: map[types.UID]*plan{}}
			res, st := pl.PostFilter(context.Background(), framework.NewCycleState(), tc.pod, tc.statuses)
			if st.Code() != fwk.Unschedulable || st.Message() != tc.want {
				t.Errorf("status = %v %q, want Unschedulable %q", st.Code(), st.Message(), tc.want)
			}
			switch {
			case tc.keep && res != nil:
				t.Errorf("result = %+v, want none (the nomination kept)", res)
			case !tc.keep && (res == nil || res.Mode() != fwk.ModeOverride || res.NominatedNodeName != ""):
				t.Errorf("result = %+v, want the nominated node cleared", res)
			}
			if len(tc.c.started) != 0 {
				t.Errorf("evictions started: %v", tc.c.started)
			}
		})
	}
}

func TestMayPreempt(t *testing.T) {
	n1 := node("n1", "4")
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		onNode    *v1.Pod
		nominated *fwk.Status
		want      bool
	}{
		{"no nomination", podOn("p", "", "1"), nil, nil, true},
		{"nominated, nothing terminating", podOn("p", "", "1", nominatedTo("n1")), podOn("r", "n1", "1"), nil, true},
		{"nominated, a victim still terminating", podOn("p", "", "1", nominatedTo("n1")), podOn("v", "n1", "1", preemptedByScheduler()), nil, false},
		{"nominated, a pod terminating on its own", podOn("p", "", "1", nominatedTo("n1")), podOn("v", "n1", "1", terminating()), nil, true},
		// The nominated node can no longer take the pod at all: waiting
		// for its victims would not help.
		{"nominated to a node that cannot take it", podOn("p", "", "1", nominatedTo("n1")), podOn("v", "n1", "1", preemptedByScheduler()), fwk.NewStatus(fwk.UnschedulableAndUnresolvable), true},
		{"preemptionPolicy Never", podOn("p", "", "1", func(p *v1.Pod) { p.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever) }), nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*v1.Pod
			if tc.onNode != nil {
				pods = append(pods, tc.onNode)
			}
			pl := &Reclaim{handle: &fakeHandle{snapshot: internalcache.NewSnapshot(pods, []*v1.Node{n1})}}
			if got, why := pl.mayPreempt(tc.pod, tc.nominated); got != tc.want {
				t.Errorf("mayPreempt = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestSelectVictimsOnNode(t *testing.T) {
	pre := podOn("pre", "", "4", prio(100))
	v0, v1_ := podOn("v0", "n1", "2", labelled("app", "x")), podOn("v1", "n1", "2")
	elsewhere := podOn("v-n2", "n2", "2")
	stays := podOn("stays", "n1", "2")
	old := podOn("old", "n1", "2", terminating())
	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, MinAvailable: ptr.To(intstr.FromInt32(1))},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
	planned := &plan{node: "n1", victims: []*v1.Pod{v0, v1_, elsewhere}, leaving: map[types.UID]bool{old.UID: true}}
	for _, tc := range []struct {
		name       string
		plan       *plan
		node       string
		filter     func(fwk.NodeInfo) *fwk.Status
		pdbs       []*policyv1.PodDisruptionBudget
		want       fwk.Code
		victims    []*v1.Pod
		violations int
	}{
		{name: "no plan for the pod", node: "n1", want: fwk.UnschedulableAndUnresolvable},
		{name: "not the planned node", plan: planned, node: "n2", want: fwk.UnschedulableAndUnresolvable},
		// Victims on other nodes (the rest of a gang's room) are returned
		// too: the Executor evicts them all.
		{name: "the planned node fits without the victims", plan: planned, node: "n1", want: fwk.Success, victims: []*v1.Pod{v0, v1_, elsewhere}},
		{name: "a victim covered by an exhausted budget counts as a violation", plan: planned, node: "n1", pdbs: []*policyv1.PodDisruptionBudget{budget},
			want: fwk.Success, victims: []*v1.Pod{v0, v1_, elsewhere}, violations: 1},
		{name: "the filters still fail", plan: planned, node: "n1", filter: func(fwk.NodeInfo) *fwk.Status {
			return fwk.NewStatus(fwk.Unschedulable, "node(s) had untolerated taint")
		},
			want: fwk.Unschedulable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHandle{filter: tc.filter}
			pl := &Reclaim{handle: h, plans: map[types.UID]*plan{}}
			if tc.plan != nil {
				pl.plans[pre.UID] = tc.plan
			}
			ni := nodeInfo(node(tc.node, "8"), v0, v1_, stays, old)
			if tc.node != "n1" {
				ni = nodeInfo(node(tc.node, "8"))
			}
			victims, violations, st := pl.SelectVictimsOnNode(context.Background(), framework.NewCycleState(), pre, ni, nil, tc.pdbs)
			if st.Code() != tc.want {
				t.Fatalf("status = %v, want %v", st, tc.want)
			}
			if tc.want != fwk.Success {
				if victims != nil {
					t.Errorf("victims = %v on failure", victims)
				}
				return
			}
			if !slices.Equal(victims, tc.victims) || violations != tc.violations {
				t.Errorf("victims, violations = %v, %d; want %v, %d", names(victims), violations, names(tc.victims), tc.violations)
			}
			// The filters ran on the node without the victims and without
			// the pod the plan counted as leaving, and the PreFilter
			// extensions were told of each removal.
			if len(h.seen) != 1 || !slices.Equal(h.seen[0], []string{"stays"}) {
				t.Errorf("the filters saw %v, want [[stays]]", h.seen)
			}
			removed := slices.Clone(h.removed)
			slices.Sort(removed)
			if !slices.Equal(removed, []string{"old", "v0", "v1"}) {
				t.Errorf("removals told to PreFilter extensions: %v", h.removed)
			}
		})
	}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestRoomFor(t *testing.T) {
	n := nodeInfo(node("n1", "8"),
		podOn("running", "n1", "2"),
		podOn("terminating", "n1", "1", terminating()),
		podOn("evicted", "n1", "2"),
	)
	pod := podOn("pre", "", "2", prio(10), inGroup("g"))
	plan := map[types.UID]bool{"pre": true, "sib": true}
	for _, tc := range []struct {
		name      string
		planned   map[types.UID]bool
		nominated []*v1.Pod
		want      int64 // milli-cpu
	}{
		// 8 - 5 used + 1 terminating + 2 evicted for an earlier plan.
		{"free plus what is leaving", plan, nil, 6000},
		{"room nominated to a pod of higher priority is not free", plan, []*v1.Pod{podOn("hi", "", "3", prio(20), nominatedTo("n1"))}, 3000},
		{"room nominated to a pod of equal priority is not free", plan, []*v1.Pod{podOn("eq", "", "1", prio(10), nominatedTo("n1"))}, 5000},
		{"room nominated to a pod of lower priority is", plan, []*v1.Pod{podOn("lo", "", "3", prio(5), nominatedTo("n1"))}, 6000},
		{"the plan's own nominated members are placed by it", plan, []*v1.Pod{podOn("sib", "", "2", prio(10), inGroup("g"), nominatedTo("n1"))}, 6000},
		// A started gang's extra plans for itself alone: a nominated
		// sibling's room is not its to count.
		{"a nominated sibling the plan does not place keeps its room", map[types.UID]bool{"pre": true}, []*v1.Pod{podOn("sib", "", "2", prio(10), inGroup("g"), nominatedTo("n1"))}, 4000},
		{"the pod's own nomination is not subtracted", plan, []*v1.Pod{pod}, 6000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nominated []fwk.PodInfo
			for _, p := range tc.nominated {
				nominated = append(nominated, podInfo(t, p))
			}
			gone := map[types.UID]bool{}
			free := roomFor(pod, tc.planned, n, nominated, map[types.UID]bool{"evicted": true}, gone)
			if got := free[resources.CPU]; got != tc.want {
				t.Errorf("room = %dm cpu, want %dm", got, tc.want)
			}
			if len(gone) != 2 || !gone["terminating"] || !gone["evicted"] {
				t.Errorf("gone = %v, want the terminating and the evicted pod", gone)
			}
		})
	}
}

func TestPodEligibleToPreemptOthers(t *testing.T) {
	pl := &Reclaim{plans: map[types.UID]*plan{"planned": {node: "n1"}}}
	if ok, _ := pl.PodEligibleToPreemptOthers(context.Background(), podOn("planned", "", "1"), nil); !ok {
		t.Error("a pod with a plan may not preempt")
	}
	// The Evaluator only runs for pods this plugin planned for.
	if ok, why := pl.PodEligibleToPreemptOthers(context.Background(), podOn("other", "", "1"), nil); ok || !strings.Contains(why, "no reclaim plan") {
		t.Errorf("a pod without a plan may preempt: %v %q", ok, why)
	}
}

func TestEventsToRegister(t *testing.T) {
	for _, async := range []bool{false, true} {
		pl := &Reclaim{fts: feature.Features{EnableAsyncPreemption: async}}
		events, err := pl.EventsToRegister(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !async {
			if len(events) != 0 {
				t.Errorf("without async preemption: events %v, want none", events)
			}
			continue
		}
		// The Executor releases its preemptor itself; the event only
		// tells the scheduler that this plugin gates pods.
		if len(events) != 1 || events[0].Event.Resource != fwk.AssignedPod || events[0].Event.ActionType != fwk.Delete {
			t.Fatalf("with async preemption: events %+v", events)
		}
		if h, err := events[0].QueueingHintFn(klog.Background(), podOn("p", "", "1"), podOn("v", "n1", "1"), nil); err != nil || h != fwk.QueueSkip {
			t.Errorf("hint = %v, %v; want QueueSkip", h, err)
		}
	}
}

func TestMarkBudgets(t *testing.T) {
	budget := func(name string, allowed int32, sel map[string]string, disrupted ...string) *policyv1.PodDisruptionBudget {
		b := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, DisruptedPods: map[string]metav1.Time{}},
		}
		for _, d := range disrupted {
			b.Status.DisruptedPods[d] = metav1.Now()
		}
		return b
	}
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, b := range []*policyv1.PodDisruptionBudget{
		budget("web", 1, map[string]string{"app": "web"}, "web-1"),
		budget("db", 0, map[string]string{"app": "db"}),
		// An empty selector selects nothing, as upstream reads it.
		budget("empty", 5, nil),
	} {
		if err := store.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	pl := &Reclaim{evaluator: &preemption.Evaluator{PdbLister: policylisters.NewPodDisruptionBudgetLister(store)}}
	running := []*v1.Pod{
		podOn("web-0", "n1", "1", labelled("app", "web")),
		podOn("web-1", "n1", "1", labelled("app", "web")), // disrupted already: spends nothing
		podOn("db-0", "n1", "1", labelled("app", "db")),
		podOn("plain", "n1", "1"),
		func() *v1.Pod {
			p := podOn("web-other-ns", "n1", "1", labelled("app", "web"))
			p.Namespace = "other"
			return p
		}(),
	}
	in := policy.Input{}
	for _, p := range running {
		in.Pods = append(in.Pods, policy.Pod{ID: p.Namespace + "/" + p.Name})
	}
	pl.markBudgets(&in, running)
	budgets := map[string]int32{}
	for i, p := range in.Pods {
		for _, b := range p.Budgets {
			budgets[p.ID] = in.Budgets[b]
		}
		if got := len(p.Budgets); got > 1 {
			t.Errorf("pod %d covered by %d budgets", i, got)
		}
	}
	want := map[string]int32{"ns/web-0": 1, "ns/db-0": 0}
	if len(budgets) != len(want) {
		t.Errorf("covered pods %v, want %v", budgets, want)
	}
	for id, allowed := range want {
		if got, ok := budgets[id]; !ok || got != allowed {
			t.Errorf("%s: budget allowing %d (covered %v), want %d", id, got, ok, allowed)
		}
	}
}

// evictedCache reports one eviction in flight, as the book would.
type evictedCache struct {
	fakeCache
	e   admission.Eviction
	src *groupspec.Source
}

func (f *evictedCache) Finish(_ types.UID, victim *v1.Pod, _ error) (admission.Eviction, *groupspec.Source, bool) {
	if victim.UID != f.e.Victim {
		return admission.Eviction{}, nil, false
	}
	return f.e, f.src, true
}

func TestEvictedEvents(t *testing.T) {
	victim := podOn("victim", "n1", "1", inGroup("low"))
	src := &groupspec.Source{Dialect: groupspec.Volcano, APIVersion: "scheduling.volcano.sh/v1beta1", Namespace: "ns", Name: "low", UID: "pg-uid"}
	for _, tc := range []struct {
		name   string
		mode   policy.Mode
		err    error
		events []string
	}{
		{"reclaimed across queues", policy.Reclaim, nil, []string{
			`Warning Reclaimed Reclaimed for ns/pre of queue "b": queue "a" holds more than its deserved share`,
			`Warning Reclaimed ns/victim: Reclaimed for ns/pre of queue "b": queue "a" holds more than its deserved share`,
		}},
		{"preempted within a queue", policy.Preempt, nil, []string{
			`Warning Preempted Preempted by ns/pre, a higher-priority group of queue "b"`,
			`Warning Preempted ns/victim: Preempted by ns/pre, a higher-priority group of queue "b"`,
		}},
		// A failed eviction evicted nothing: no Event says it did.
		{"the eviction failed", policy.Reclaim, errors.New("conflict"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &evictedCache{e: admission.Eviction{Victim: victim.UID, Preemptor: "pre", PreemptorName: "ns/pre", Mode: tc.mode, Queue: "b", VictimQueue: "a"}, src: src}
			pl, rec := profile(nil)
			pl.cache, pl.evictions = c, c
			pl.evicted(context.Background(), "pre", victim, tc.err)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if !slices.Equal(got, tc.events) {
				t.Errorf("events\n got %q\nwant %q", got, tc.events)
			}
		})
	}
}
