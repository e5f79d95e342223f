package cache

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// GangShape returns the minMember of pod's gang and how many of its members
// are active (not finished); ok is false for a pod outside any known gang.
// O(1).
func (c *Cache) GangShape(pod *v1.Pod) (minMember, active int, ok bool) {
	key, labelled := GroupKeyOf(pod)
	if !labelled {
		return 0, 0, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.groups[key]
	if g == nil || g.pg == nil {
		return 0, 0, false
	}
	return int(g.spec.MinMember), g.counts.Active, true
}

// FreeOf is a node's allocatable minus what its pods (assumed ones included)
// request, as the scheduler's snapshot has them.
func FreeOf(n fwk.NodeInfo) resources.List {
	a, r := n.GetAllocatable(), n.GetRequested()
	out := resources.List{}
	for _, name := range []string{resources.CPU, string(v1.ResourceMemory), string(v1.ResourceEphemeralStorage)} {
		out[name] = AmountOf(a, name) - AmountOf(r, name)
	}
	for k, v := range a.GetScalarResources() {
		out[string(k)] = v - r.GetScalarResources()[k]
	}
	return out
}

// AmountOf reads one resource of a scheduler Resource in the policy's units
// (cpu in millicores, the rest in base units).
func AmountOf(r fwk.Resource, name string) int64 {
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

// PodRequest is what a pod requests, as the cache and the policy count it.
func PodRequest(pod *v1.Pod) resources.List { return podRequest(pod) }
