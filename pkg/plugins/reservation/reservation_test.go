package reservation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// t0 is when the fixture's running pods started; passes run at t0+10s.
var t0 = time.Date(2026, 12, 5, 6, 58, 20, 0, time.UTC)

const gib = int64(1) << 30

type podOpt func(*v1.Pod)

// pod is a pod of the cache's profile requesting cpu and memory.
func pod(name, cpu, mem string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1.PodSpec{SchedulerName: cachetest.Profile, Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// running binds the pod to node, started at t0 with a limit of seconds.
func running(node string, seconds int) podOpt {
	return func(p *v1.Pod) {
		p.Spec.NodeName = node
		p.Status.Phase = v1.PodRunning
		p.Status.StartTime = &metav1.Time{Time: t0}
		limit(seconds)(p)
	}
}

func limit(seconds int) podOpt {
	return func(p *v1.Pod) { p.Annotations = map[string]string{runlimit.Annotation: fmt.Sprint(seconds)} }
}

func inGroup(group string) podOpt {
	return func(p *v1.Pod) { p.Labels = map[string]string{gangbook.PodGroupLabel: group} }
}

func node(name, cpu, mem string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("110")}}}
}

// fixture is three nodes of 4 cpu and 16Gi: n0 runs a 4-cpu, 8Gi pod until
// t0+100, n1 one until t0+300, n2 is empty. Gang train (two members of 4
// cpu and 8Gi) fits only once n0's pod ends: after an admission pass at
// t0+10 it holds a reservation from t0+100 on n0 and n2.
type fixture struct {
	c       *cache.Cache
	nodes   []*v1.Node
	bound   []*v1.Pod
	members []*v1.Pod
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{
		nodes: []*v1.Node{node("n0", "4", "16Gi"), node("n1", "4", "16Gi"), node("n2", "4", "16Gi")},
		bound: []*v1.Pod{pod("run0", "4", "8Gi", running("n0", 100)), pod("run1", "4", "8Gi", running("n1", 300))},
	}
	for i := range 2 {
		fx.members = append(fx.members, pod(fmt.Sprint("train", i), "4", "8Gi", inGroup("train")))
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train", UID: "train",
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}}

	c, f := cachetest.NewUnstarted(t)
	opts := admission.Options{DefaultQueue: qapi.DefaultQueueName, AdmitSingletons: true, StarvationThreshold: -1}
	if err := f.Provider().EnableAdmission(cachetest.Profile, opts); err != nil {
		t.Fatal(err)
	}
	// Sealed as the command seals it before the feed delivers anything;
	// Start's own Seal then applies nothing more.
	if _, err := f.Provider().Seal(); err != nil {
		t.Fatal(err)
	}
	c.ApplyQueue(&qapi.Queue{ObjectMeta: metav1.ObjectMeta{Name: qapi.DefaultQueueName}, Spec: qapi.QueueSpec{Weight: 1}})
	for _, n := range fx.nodes {
		c.ApplyNode(klog.Background(), n)
	}
	f.Start([]*v1alpha1.PodGroup{pg}, append(append([]*v1.Pod{}, fx.bound...), fx.members...))
	c.AdmissionPass(klog.Background(), t0.Add(10*time.Second))
	fx.c = c
	return fx
}

// plugin is the plugin over c, its clock at t0+10s.
func plugin(c rooms) *Reservation {
	return &Reservation{cache: c, now: func() time.Time { return t0.Add(10 * time.Second) }}
}

// nodeInfo is the scheduler's view of n with pods placed on it.
func nodeInfo(n *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	return ni
}

func TestPreFilter(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		wantHolds []string // nodes with holds; nil: Skip
	}{
		{"a pod without a limit", pod("endless", "4", "1Gi"), []string{"n0", "n2"}},
		{"a pod that ends before the reservation starts", pod("short", "4", "1Gi", limit(60)), nil},
		{"a pod that ends after it starts", pod("long", "4", "1Gi", limit(600)), []string{"n0", "n2"}},
		{"a member of the reserved gang", fx.members[1], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := framework.NewCycleState()
			res, st := plugin(fx.c).PreFilter(context.Background(), cs, tc.pod, nil)
			if res != nil {
				t.Errorf("PreFilter restricted the nodes to %v; it never should", res.NodeNames)
			}
			if tc.wantHolds == nil {
				if !st.IsSkip() {
					t.Errorf("PreFilter = %v, want Skip", st)
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatalf("PreFilter = %v, want Success", st)
			}
			s, err := readState(cs)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.holds) != len(tc.wantHolds) {
				t.Errorf("holds on %d nodes %+v, want %v", len(s.holds), s.holds, tc.wantHolds)
			}
			for _, n := range tc.wantHolds {
				if hs := s.holds[n]; len(hs) != 1 || hs[0].Reservation != "pg:ns/train" {
					t.Errorf("holds on %s = %+v, want train's", n, hs)
				}
			}
			if s.request[resources.CPU] != 4000 || s.request[string(v1.ResourceMemory)] != gib {
				t.Errorf("state's request %v, want cpu=4000m memory=1Gi", s.request)
			}
		})
	}
}

// Without admission, or while no group holds a reservation, every pod is
// skipped.
func TestPreFilterSkipsWithoutReservations(t *testing.T) {
	c := cachetest.NewForTest(t, nil, nil)
	if _, st := plugin(c).PreFilter(context.Background(), framework.NewCycleState(), pod("p", "1", "1Gi"), nil); !st.IsSkip() {
		t.Errorf("PreFilter = %v, want Skip", st)
	}
}

// The cache's reservation, end to end: a pod without a limit is kept off
// the reserved nodes unless what it leaves covers the gang at its start.
func TestFilterWithTheCache(t *testing.T) {
	fx := newFixture(t)
	n0, n1, n2 := fx.nodes[0], fx.nodes[1], fx.nodes[2]
	reason := "room reserved for pg:ns/train from " + t0.Add(100*time.Second).Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		ni   fwk.NodeInfo
		want string // "" fits
	}{
		// n0: 0 cpu free now, 4 back by t0+100, the gang needs 4.
		{"n0: any cpu eats the gang's", pod("a", "100m", "1Gi"), nodeInfo(n0, fx.bound[0]), reason},
		// n1 holds nothing (its pod ends after the gang's start).
		{"n1: no holds", pod("b", "100m", "1Gi"), nodeInfo(n1, fx.bound[1]), ""},
		// n2: 4 free, none back, 4 needed.
		{"n2: would eat the need", pod("c", "1", "1Gi"), nodeInfo(n2), reason},
		// A pod asking for memory alone leaves the gang its cpu, and 16Gi
		// less 1Gi covers its 8Gi.
		{"n2: memory to spare", pod("d", "0", "1Gi"), nodeInfo(n2), ""},
		{"n2: too much memory", pod("e", "0", "9Gi"), nodeInfo(n2), reason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := plugin(fx.c)
			cs := framework.NewCycleState()
			if _, st := pl.PreFilter(context.Background(), cs, tc.pod, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter = %v, want the holds stored", st)
			}
			st := pl.Filter(context.Background(), cs, tc.pod, tc.ni)
			checkFilter(t, st, tc.want)
		})
	}
}

func checkFilter(t *testing.T, st *fwk.Status, want string) {
	t.Helper()
	if want == "" {
		if !st.IsSuccess() {
			t.Errorf("Filter = %v, want the node to pass", st)
		}
		return
	}
	if st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Errorf("Filter = %v %q, want Unschedulable %q", st.Code(), st.Message(), want)
	}
}

// hold is a hold of reservation r from t0+at seconds.
func hold(r string, at int, need, released resources.List) admission.NodeHold {
	return admission.NodeHold{Reservation: r, Start: t0.Add(time.Duration(at) * time.Second), Need: need, ReleasedBy: released}
}

// The Filter's arithmetic on holds given directly: free now + released by
// the start - the pod's request >= need, per hold and resource.
func TestFilter(t *testing.T) {
	n := node("n", "8", "32Gi") // the pods below take 4 cpu and 8Gi
	busy := []*v1.Pod{pod("x", "4", "8Gi", running("n", 100))}
	mem := string(v1.ResourceMemory)
	cpuHold := hold("pg:ns/a", 100, resources.List{resources.CPU: 6000}, resources.List{resources.CPU: 4000})
	for _, tc := range []struct {
		name  string
		holds []admission.NodeHold
		req   resources.List
		want  string
	}{
		{"fits with the releases counted", []admission.NodeHold{cpuHold}, resources.List{resources.CPU: 2000}, ""},
		{"refused when it would eat the need", []admission.NodeHold{cpuHold}, resources.List{resources.CPU: 2001}, Reason(cpuHold)},
		{"no hold on the node", nil, resources.List{resources.CPU: 8000}, ""},
		{"multiple resources: memory short", []admission.NodeHold{hold("pg:ns/a", 100,
			resources.List{resources.CPU: 1000, mem: 20 * gib}, nil)},
			resources.List{resources.CPU: 1000, mem: 5 * gib}, "room reserved for pg:ns/a from 2026-12-05T07:00:00Z"},
		{"multiple resources: both left", []admission.NodeHold{hold("pg:ns/a", 100,
			resources.List{resources.CPU: 1000, mem: 20 * gib}, resources.List{mem: 8 * gib})},
			resources.List{resources.CPU: 3000, mem: 12 * gib}, ""},
		{"a resource the pod does not request", []admission.NodeHold{hold("pg:ns/a", 100,
			resources.List{resources.CPU: 1000, "nvidia.com/gpu": 2}, nil)},
			resources.List{resources.CPU: 1000}, ""},
		{"the later hold refuses", []admission.NodeHold{cpuHold,
			hold("pg:ns/b", 200, resources.List{resources.CPU: 7000}, resources.List{resources.CPU: 4000})},
			resources.List{resources.CPU: 2000}, "room reserved for pg:ns/b from 2026-12-05T07:01:40Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := framework.NewCycleState()
			holds := map[string][]admission.NodeHold{"other": {cpuHold}}
			if tc.holds != nil {
				holds["n"] = tc.holds
			}
			cs.Write(stateKey, &state{holds: holds, request: tc.req})
			st := plugin(nil).Filter(context.Background(), cs, nil, nodeInfo(n, busy...))
			checkFilter(t, st, tc.want)
		})
	}
}

// Filter without PreFilter's state is an error, not a silent pass.
func TestFilterWithoutState(t *testing.T) {
	st := plugin(nil).Filter(context.Background(), framework.NewCycleState(), nil, nodeInfo(node("n", "1", "1Gi")))
	if st.Code() != fwk.Error || !strings.Contains(st.Message(), string(stateKey)) {
		t.Errorf("Filter = %v, want an error naming %s", st, stateKey)
	}
}
