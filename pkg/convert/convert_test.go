package convert

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/resources"
)

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func TestResourcesRoundTrip(t *testing.T) {
	in := rl("cpu", "1500m", "memory", "2Gi", "nvidia.com/gpu", "4")
	got := Resources(in)
	want := resources.List{resources.CPU: 1500, "memory": 2 << 30, "nvidia.com/gpu": 4}
	if !got.Equal(want) {
		t.Errorf("Resources = %v, want %v", got, want)
	}
	back := ResourceList(got)
	for name, q := range in {
		if b := back[name]; b.Cmp(q) != 0 {
			t.Errorf("%s: round trip gives %s, want %s", name, b.String(), q.String())
		}
	}
	// Zero amounts are left out of status; an empty vector is nil.
	if l := ResourceList(resources.List{resources.CPU: 0, "memory": 1}); len(l) != 1 {
		t.Errorf("ResourceList kept a zero amount: %v", l)
	}
	if ResourceList(nil) != nil {
		t.Error("ResourceList(nil) is not nil")
	}
}

// PodRequest is upstream's count: the largest init container or the sum of
// the app containers, plus overhead.
func TestPodRequest(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: rl("cpu", "3")}}},
		Containers: []v1.Container{
			{Name: "a", Resources: v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}},
			{Name: "b", Resources: v1.ResourceRequirements{Requests: rl("cpu", "500m")}},
		},
		Overhead: rl("cpu", "100m"),
	}}
	want := resources.List{resources.CPU: 3100, "memory": 1 << 30}
	if got := PodRequest(pod); !got.Equal(want) {
		t.Errorf("PodRequest = %v, want %v", got, want)
	}
}

func TestNodeFree(t *testing.T) {
	n := framework.NewNodeInfo(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1.PodSpec{NodeName: "n", Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "1")}}}},
	})
	n.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Status: v1.NodeStatus{Allocatable: rl("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", "8", "pods", "110")}})
	got := NodeFree(n)
	want := resources.List{resources.CPU: 3000, "memory": 7 << 30, "ephemeral-storage": 0, "nvidia.com/gpu": 7}
	if !got.Equal(want) {
		t.Errorf("NodeFree = %v, want %v", got, want)
	}
}

func TestQueueSpec(t *testing.T) {
	q := &qapi.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: qapi.QueueSpec{
		Parent: "org", Weight: 3, Capability: rl("cpu", "8"), Priority: 2,
	}}
	s := QueueSpec(q)
	if s.Name != "team-a" || s.Parent != "org" || s.Weight != 3 || s.Priority != 2 || s.Capability[resources.CPU] != 8000 || s.Guarantee != nil {
		t.Errorf("QueueSpec = %+v", s)
	}
	// A Queue that does not say is reclaimable; one that says no is not.
	if !s.Reclaimable {
		t.Error("a Queue without reclaimable is not reclaimable")
	}
	q.Spec.Reclaimable = ptr.To(false)
	if QueueSpec(q).Reclaimable {
		t.Error("reclaimable: false is reclaimable")
	}
}

func TestQuotaResources(t *testing.T) {
	got := QuotaResources(rl("requests.cpu", "2", "memory", "1Gi", "limits.cpu", "4", "pods", "10", "requests.nvidia.com/gpu", "2"))
	want := resources.List{resources.CPU: 2000, "memory": 1 << 30, "nvidia.com/gpu": 2}
	if !got.Equal(want) {
		t.Errorf("QuotaResources = %v, want %v (limits and counts dropped)", got, want)
	}
	for name, want := range map[v1.ResourceName]string{"cpu": resources.CPU, "requests.cpu": resources.CPU, "requests.memory": "memory", "ephemeral-storage": "ephemeral-storage"} {
		if got, ok := QuotaResource(name); !ok || got != want {
			t.Errorf("QuotaResource(%s) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []v1.ResourceName{"limits.cpu", "pods", "count/jobs.batch"} {
		if got, ok := QuotaResource(name); ok {
			t.Errorf("QuotaResource(%s) = %q: it limits no request", name, got)
		}
	}
}

func TestQuotas(t *testing.T) {
	enforced := &v1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "enforced"},
		Spec:       v1.ResourceQuotaSpec{Hard: rl("requests.cpu", "8")},
		Status:     v1.ResourceQuotaStatus{Hard: rl("requests.cpu", "4", "limits.cpu", "8"), Used: rl("requests.cpu", "1500m")},
	}
	fresh := &v1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "fresh"},
		Spec:       v1.ResourceQuotaSpec{Hard: rl("memory", "1Gi")},
	}
	got := Quotas([]*v1.ResourceQuota{enforced, fresh})
	if len(got) != 2 {
		t.Fatalf("Quotas = %v, want 2", got)
	}
	for i, want := range []struct {
		name       string
		hard, used resources.List
	}{
		// The status is what the quota controller enforces; limits drop out.
		{"enforced", resources.List{resources.CPU: 4000}, resources.List{resources.CPU: 1500}},
		// No status yet: the spec, nothing used.
		{"fresh", resources.List{"memory": 1 << 30}, resources.List{}},
	} {
		if got[i].Name != want.name || !got[i].Hard.Equal(want.hard) || !got[i].Used.Equal(want.used) {
			t.Errorf("Quotas[%d] = %+v, want %s hard %v used %v", i, got[i], want.name, want.hard, want.used)
		}
	}
}
