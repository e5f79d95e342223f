package convert

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// A list interned right after an equal-looking one with a resource more at
// zero keeps that resource: the match on the last list is on entries, not
// on amounts alone.
func TestInternLastKeepsZeroEntries(t *testing.T) {
	var in RequestInterner
	in.intern(resources.List{resources.CPU: 1000})
	got := in.intern(resources.List{resources.CPU: 1000, "nvidia.com/gpu": 0})
	if _, ok := got["nvidia.com/gpu"]; !ok || len(got) != 2 {
		t.Errorf("intern = %v, want cpu and a zero gpu", got)
	}
	if again := in.intern(resources.List{resources.CPU: 1000}); len(again) != 1 {
		t.Errorf("intern = %v, want cpu alone", again)
	}
}

// PodRequest sums what PodRequest sums, for one container and for
// several; a pod remembered is summed once, and after forget a pod object
// changed in place is summed again.
func TestPodRequestRemembered(t *testing.T) {
	var in RequestInterner
	one := cpuPod("one", "1500m")
	two := cpuPod("two", "250m")
	two.Spec.Containers = append(two.Spec.Containers, *two.Spec.Containers[0].DeepCopy())
	two.Spec.Containers[1].Resources.Requests[v1.ResourceCPU] = resource.MustParse("0.3333")
	for _, p := range []*v1.Pod{one, two} {
		if got, want := in.PodRequest(p, nil), PodRequest(p); !got.Equal(want) || len(got) != len(want) {
			t.Errorf("PodRequest(%s) = %v, want %v", p.Name, got, want)
		}
	}
	in.Remember(one)
	first := in.PodRequest(one, nil)
	one.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("3")
	if got := in.PodRequest(one, nil); got[resources.CPU] != 1500 || !got.Equal(first) {
		t.Errorf("remembered PodRequest = %v, want the first sum %v", got, first)
	}
	in.Forget()
	if got := in.PodRequest(one, first); got[resources.CPU] != 3000 {
		t.Errorf("PodRequest after Forget = %v, want cpu 3000", got)
	}
}

// cpuPod is a pod of one container requesting cpu q.
func cpuPod(name, q string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.PodSpec{Containers: []v1.Container{{
		Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}}}}}}
}
