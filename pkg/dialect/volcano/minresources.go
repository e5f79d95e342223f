package volcano

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

// MinResources reads a Volcano PodGroup's spec.minResources as Volcano's
// scheduler reads it, into the plain resource names nodes offer. Since
// Volcano v1.10 its job controller fills minResources with a pod's quota
// usage (quotacore.PodUsageFunc summed over the minimum members), so the
// list holds quota names beside resource names: count/pods, pods,
// requests.cpu, limits.memory, requests.nvidia.com/gpu... No node offers
// those, and taken as resources they would make every such gang "never
// fit". Volcano's scheduler keeps cpu, memory, ephemeral-storage and the
// scalar names (extended resources, hugepages, attachable volumes) and
// drops the rest; here, besides, requests.X stands for X when X itself is
// absent (a hand-written quota-style list), limits.* are dropped (a gang
// needs its requests on nodes, not its limits), and pods is dropped (the
// number of members is minMember). nil in, nil out.
func MinResources(in v1.ResourceList) v1.ResourceList {
	if in == nil {
		return nil
	}
	out := v1.ResourceList{}
	for name, q := range in {
		if plain, ok := strings.CutPrefix(string(name), v1.DefaultResourceRequestsPrefix); ok {
			name = v1.ResourceName(plain)
			if _, has := in[name]; has {
				continue // the plain name says the same
			}
		}
		if !nodeResource(name) {
			continue
		}
		add(out, name, q)
	}
	return out
}

// nodeResource reports whether nodes offer name as allocatable room that
// a pod's request takes: what Volcano's scheduler keeps of a list.
func nodeResource(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return true
	case v1.ResourcePods:
		return false
	}
	// Quota names would pass the scalar test below as extended names
	// (a domain, a slash, a name).
	if strings.HasPrefix(string(name), "count/") || strings.HasPrefix(string(name), "limits.") {
		return false
	}
	return v1helper.IsExtendedResourceName(name) || v1helper.IsHugePageResourceName(name) ||
		v1helper.IsPrefixedNativeResource(name) || v1helper.IsAttachableVolumeResourceName(name)
}

// add adds q to out[name].
func add(out v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	if have, ok := out[name]; ok {
		have.Add(q)
		out[name] = have
		return
	}
	out[name] = q.DeepCopy()
}
