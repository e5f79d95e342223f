// Package convert turns Kubernetes objects into the policy packages' types
// (pkg/resources, pkg/queue) and back. It is the one place that knows both:
// the policy packages import no Kubernetes API, and the cache and the
// plugins call these instead of converting on their own. It holds no state.
package convert

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Resources converts a v1.ResourceList to the policy's vector: cpu in
// millicores, everything else in its base unit.
func Resources(rl v1.ResourceList) resources.List {
	out := make(resources.List, len(rl))
	for name, q := range rl {
		if name == v1.ResourceCPU {
			out[resources.CPU] = q.MilliValue()
		} else {
			out[string(name)] = q.Value()
		}
	}
	return out
}

// ResourceList converts the policy's vector back to API quantities (for
// status), leaving out zero amounts; nil for an empty vector.
func ResourceList(l resources.List) v1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	out := v1.ResourceList{}
	for k, v := range l {
		if v == 0 {
			continue
		}
		if k == resources.CPU {
			out[v1.ResourceCPU] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		} else {
			out[v1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	return out
}

// PodRequest is what a pod requests as the scheduler counts it (upstream's
// resourcehelper.PodRequests: init containers, sidecars, overhead, pod-level
// resources, in-place resizes), in the policy's units.
func PodRequest(pod *v1.Pod) resources.List {
	return Resources(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}

// NodeFree is a node's allocatable minus what its pods (assumed ones
// included) request, as the scheduler's snapshot has them.
func NodeFree(n fwk.NodeInfo) resources.List {
	a, r := n.GetAllocatable(), n.GetRequested()
	out := resources.List{}
	for _, name := range []string{resources.CPU, string(v1.ResourceMemory), string(v1.ResourceEphemeralStorage)} {
		out[name] = Amount(a, name) - Amount(r, name)
	}
	for k, v := range a.GetScalarResources() {
		out[string(k)] = v - r.GetScalarResources()[k]
	}
	return out
}

// Amount reads one resource of a scheduler Resource in the policy's units
// (cpu in millicores, the rest in base units).
func Amount(r fwk.Resource, name string) int64 {
	switch name {
	case resources.CPU:
		return r.GetMilliCPU()
	case string(v1.ResourceMemory):
		return r.GetMemory()
	case string(v1.ResourceEphemeralStorage):
		return r.GetEphemeralStorage()
	default:
		return r.GetScalarResources()[v1.ResourceName(name)]
	}
}

// QueueSpec converts a Queue to the policy's view. A Queue that does not
// say whether it is reclaimable is.
func QueueSpec(q *qapi.Queue) queue.Spec {
	s := queue.Spec{
		Name:        q.Name,
		Parent:      q.Spec.Parent,
		Weight:      q.Spec.Weight,
		Reclaimable: q.Spec.Reclaimable == nil || *q.Spec.Reclaimable,
		Priority:    q.Spec.Priority,
		State:       queue.State(q.Spec.State),
	}
	if q.Spec.Capability != nil {
		s.Capability = Resources(q.Spec.Capability)
	}
	if q.Spec.Guarantee != nil {
		s.Guarantee = Resources(q.Spec.Guarantee)
	}
	return s
}

// Quotas converts a namespace's ResourceQuotas to admission's quota check
// input: each quota's enforced hard amounts (status, which the quota
// controller keeps, else spec) and used amounts, for the resources that
// limit requests.
func Quotas(list []*v1.ResourceQuota) []queue.Quota {
	out := make([]queue.Quota, 0, len(list))
	for _, q := range list {
		hard := q.Status.Hard
		if hard == nil {
			hard = q.Spec.Hard
		}
		out = append(out, queue.Quota{Name: q.Name, Hard: QuotaResources(hard), Used: QuotaResources(q.Status.Used)})
	}
	return out
}

// QuotaResources converts a ResourceQuota's amounts to the requests they
// limit, dropping what does not limit requests (limits.*, object counts).
func QuotaResources(rl v1.ResourceList) resources.List {
	out := resources.List{}
	for name, q := range rl {
		res, ok := QuotaResource(name)
		if !ok {
			continue
		}
		if res == resources.CPU {
			out[res] = q.MilliValue()
		} else {
			out[res] = q.Value()
		}
	}
	return out
}

// QuotaResource maps a ResourceQuota resource name to the request it limits
// (requests.cpu and cpu both limit cpu requests), or false.
func QuotaResource(name v1.ResourceName) (string, bool) {
	n := string(name)
	switch {
	case strings.HasPrefix(n, "requests."):
		n = strings.TrimPrefix(n, "requests.")
	case n == "cpu" || n == "memory" || n == "ephemeral-storage":
	default:
		return "", false
	}
	if n == "cpu" {
		return resources.CPU, true
	}
	return n, true
}
