package cache

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// TestPodRequest checks the allocation-free request of a pod event
// against convert.PodRequest (resourcehelper.PodRequests) for the pod shapes it
// handles itself and those it hands over, and that an unchanged request
// reuses the previous account's list.
func TestPodRequest(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	reqs := func(kv ...string) v1.ResourceList {
		rl := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return rl
	}
	withContainers := func(rls ...v1.ResourceList) *v1.Pod {
		p := mkPod("ns", "p", "")
		p.Spec.Containers = nil
		for _, rl := range rls {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: rl}})
		}
		return p
	}
	initPod := withContainers(reqs("cpu", "1"))
	initPod.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: reqs("cpu", "3")}}}
	overhead := withContainers(reqs("cpu", "1"))
	overhead.Spec.Overhead = reqs("cpu", "250m")
	podLevel := withContainers(reqs("cpu", "1"))
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: reqs("cpu", "2")}

	for name, pod := range map[string]*v1.Pod{
		"no requests":         withContainers(nil),
		"one container":       withContainers(reqs("cpu", "500m", "memory", "1Gi")),
		"two containers":      withContainers(reqs("cpu", "100m", "nvidia.com/gpu", "1"), reqs("cpu", "1", "memory", "10Mi")),
		"fractional amounts":  withContainers(reqs("cpu", "0.0004", "memory", "0.5"), reqs("cpu", "0.0004", "memory", "0.5")),
		"init containers":     initPod,
		"overhead":            overhead,
		"pod-level resources": podLevel,
	} {
		t.Run(name, func(t *testing.T) {
			c.mu.Lock()
			defer c.mu.Unlock()
			want := convert.PodRequest(pod)
			got := c.requests.PodRequest(pod, nil)
			if !got.Equal(want) {
				t.Fatalf("requests.PodRequest = %v, convert.PodRequest = %v", got, want)
			}
			if again := c.requests.PodRequest(pod, got); !again.Equal(want) {
				t.Fatalf("with a previous account: %v, want %v", again, want)
			}
		})
	}

	t.Run("an unchanged request reuses the account's list; a changed one does not", func(t *testing.T) {
		c.mu.Lock()
		defer c.mu.Unlock()
		pod := withContainers(reqs("cpu", "1"))
		old := c.requests.PodRequest(pod, nil)
		if got := c.requests.PodRequest(pod, old); !sameMap(got, old) {
			t.Fatalf("unchanged request: got a new list %v", got)
		}
		resized := withContainers(reqs("cpu", "2"))
		got := c.requests.PodRequest(resized, old)
		if sameMap(got, old) || got["cpu"] != 2000 || old["cpu"] != 1000 {
			t.Fatalf("resized: got %v (old %v), want a new list with cpu 2000 and the old one untouched", got, old)
		}
	})
}

// sameMap reports whether two lists are the same map object, not just equal.
func sameMap(a, b map[string]int64) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestUnitHoldSharesNoListItChanges: a unit holds its first bound pod's
// request list without copying it (pods share interned lists), copies it
// before a second pod is added or a different amount taken away, and never
// changes a list it was given.
func TestUnitHoldSharesNoListItChanges(t *testing.T) {
	a := resources.List{resources.CPU: 1000, "memory": 1 << 30}
	b := resources.List{resources.CPU: 2000}
	steps := []struct {
		hold bool
		req  resources.List
		want resources.List
	}{
		{true, a, a},
		{false, a, nil},
		{true, a, a},
		{true, b, resources.List{resources.CPU: 3000, "memory": 1 << 30}},
		{false, a, resources.List{resources.CPU: 2000, "memory": 0}},
		{false, b, resources.List{resources.CPU: 0, "memory": 0}},
		{true, b, b},
		{false, a, resources.List{resources.CPU: 1000, "memory": -1 << 30}},
	}
	var u admission.Unit
	for i, s := range steps {
		if s.hold {
			u.Hold(s.req)
		} else {
			u.Release(s.req)
		}
		if !u.Held.Equal(s.want) || (len(s.want) == 0) != (len(u.Held) == 0) {
			t.Fatalf("step %d: held %v, want %v", i, u.Held, s.want)
		}
		if a[resources.CPU] != 1000 || a["memory"] != 1<<30 || len(a) != 2 || b[resources.CPU] != 2000 || len(b) != 1 {
			t.Fatalf("step %d changed a shared request list: a=%v b=%v", i, a, b)
		}
	}
}
