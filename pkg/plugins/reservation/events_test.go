package reservation

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Each registered event has its own hint: an assigned pod deleted and a
// node added or grown, nothing else.
func TestEventsToRegister(t *testing.T) {
	events, err := plugin(nil).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[fwk.ClusterEvent]bool{
		{Resource: fwk.AssignedPod, ActionType: fwk.Delete}:                   true,
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}: true,
	}
	if len(events) != len(want) {
		t.Fatalf("registered %d events %v, want %d", len(events), events, len(want))
	}
	for _, e := range events {
		if !want[e.Event] || e.QueueingHintFn == nil {
			t.Errorf("registered %v (hint set: %v), want one of %v with a hint", e.Event, e.QueueingHintFn != nil, want)
		}
	}
}

func TestAfterPodDeleted(t *testing.T) {
	nominated := pod("n", "1", "1Gi")
	nominated.Status.NominatedNodeName = "n1"
	for _, tc := range []struct {
		name    string
		deleted any
		want    fwk.QueueingHint
		wantErr bool
	}{
		{"a bound pod: its room is free", pod("b", "1", "1Gi", running("n1", 100)), fwk.Queue, false},
		{"a nominated pod: the room it was to take is free", nominated, fwk.Queue, false},
		{"a pod that held no room", pod("u", "1", "1Gi"), fwk.QueueSkip, false},
		{"not a pod", &v1.Node{}, fwk.Queue, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := afterPodDeleted(klog.Background(), pod("p", "1", "1Gi"), tc.deleted, nil)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("hint = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestAfterNodeGrew(t *testing.T) {
	small := node("n", "4", "16Gi")
	withGPU := node("n", "4", "16Gi")
	withGPU.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	for _, tc := range []struct {
		name     string
		old, new any
		want     fwk.QueueingHint
		wantErr  bool
	}{
		{"a node added", nil, small, fwk.Queue, false},
		{"more cpu", small, node("n", "8", "16Gi"), fwk.Queue, false},
		{"a new resource", small, withGPU, fwk.Queue, false},
		{"the same size", small, node("n", "4", "16Gi"), fwk.QueueSkip, false},
		{"less memory", small, node("n", "4", "8Gi"), fwk.QueueSkip, false},
		{"not a node", nil, &v1.Pod{}, fwk.Queue, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := afterNodeGrew(klog.Background(), pod("p", "1", "1Gi"), tc.old, tc.new)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("hint = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// Pods that the Filter may treat differently sign differently: their
// run-time limits or their groups differ.
func TestSignPod(t *testing.T) {
	sign := func(p *v1.Pod) []fwk.SignFragment {
		t.Helper()
		f, st := plugin(nil).SignPod(context.Background(), p)
		if !st.IsSuccess() {
			t.Fatalf("SignPod(%s) = %v, want signed", p.Name, st)
		}
		return f
	}
	same := func(a, b []fwk.SignFragment) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	a, b := sign(pod("a", "1", "1Gi")), sign(pod("b", "2", "1Gi"))
	if !same(a, b) {
		t.Errorf("two pods without a limit sign %v and %v, want the same", a, b)
	}
	for _, p := range []*v1.Pod{pod("c", "1", "1Gi", limit(60)), pod("d", "1", "1Gi", inGroup("g"))} {
		if f := sign(p); same(a, f) {
			t.Errorf("%s signs %v, as a pod without a limit or group does", p.Name, f)
		}
	}
}

// New takes no args: none or empty is fine, any field is refused.
func TestNew(t *testing.T) {
	cs := fake.NewSimpleClientset()
	h, err := frameworkruntime.NewFramework(t.Context(), nil, &config.KubeSchedulerProfile{SchedulerName: "p"},
		frameworkruntime.WithClientSet(cs), frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(cs, 0)),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}))
	if err != nil {
		t.Fatal(err)
	}
	p := cache.NewProvider(status.AlwaysLeading())
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		ok   bool
	}{
		{"no args", nil, true},
		{"empty args", &runtime.Unknown{Raw: []byte("{}")}, true},
		{"a field", &runtime.Unknown{Raw: []byte(`{"maxHolds": 3}`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := New(t.Context(), tc.obj, h, p)
			if (err == nil) != tc.ok {
				t.Fatalf("New = %v, want ok %v", err, tc.ok)
			}
			if tc.ok && (pl.Name() != Name || p.Cache() == nil) {
				t.Errorf("New built %s (cache %v), want %s over the provider's cache", pl.Name(), p.Cache(), Name)
			}
		})
	}
}
