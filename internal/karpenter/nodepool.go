package karpenter

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NodePoolOptions describes a NodePool and its KWOKNodeClass.
type NodePoolOptions struct {
	// Name of the NodePool and of its KWOKNodeClass (default "default").
	Name string
	// CPULimit is spec.limits.cpu (default "64"): Karpenter launches no
	// node that would take the pool's nodes past it.
	CPULimit string
	// ConsolidationPolicy: WhenEmptyOrUnderutilized (default) or WhenEmpty.
	ConsolidationPolicy string
	// ConsolidateAfter: how long a node must have had no pod change before
	// Karpenter may consolidate it (default 5s). Karpenter then validates
	// its decision for 15 s and polls every 10 s, so an empty node goes
	// about 25-35 s after this.
	ConsolidateAfter time.Duration
	// InstanceTypes restricts the NodePool to these instance type names
	// (all offered ones when empty).
	InstanceTypes []string
	// RegistrationDelay is the KWOKNodeClass's nodeRegistrationDelay: how
	// long after a NodeClaim is launched its Node appears (default 0), as
	// a machine's boot time.
	RegistrationDelay time.Duration
}

// Complete fills o's defaults.
func (o *NodePoolOptions) Complete() {
	if o.Name == "" {
		o.Name = "default"
	}
	if o.CPULimit == "" {
		o.CPULimit = "64"
	}
	if o.ConsolidationPolicy == "" {
		o.ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	}
	if o.ConsolidateAfter == 0 {
		o.ConsolidateAfter = 5 * time.Second
	}
}

// NodeClass is the KWOKNodeClass of o (completed).
func NodeClass(o NodePoolOptions) *unstructured.Unstructured {
	spec := map[string]any{}
	if o.RegistrationDelay > 0 {
		spec["nodeRegistrationDelay"] = DurationString(o.RegistrationDelay)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.kwok.sh/v1alpha1",
		"kind":       "KWOKNodeClass",
		"metadata":   map[string]any{"name": o.Name},
		"spec":       spec,
	}}
}

// NodePool is the NodePool of o (completed): linux/amd64 on-demand nodes
// of its instance types, never expiring, consolidated with a budget of
// every node at once (so that an idle sandbox or test empties quickly).
func NodePool(o NodePoolOptions) *unstructured.Unstructured {
	requirements := []any{
		map[string]any{"key": v1.LabelArchStable, "operator": "In", "values": []any{"amd64"}},
		map[string]any{"key": v1.LabelOSStable, "operator": "In", "values": []any{"linux"}},
		map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}},
	}
	if len(o.InstanceTypes) > 0 {
		var names []any
		for _, n := range o.InstanceTypes {
			names = append(names, n)
		}
		requirements = append(requirements, map[string]any{"key": v1.LabelInstanceTypeStable, "operator": "In", "values": names})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1",
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": o.Name},
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"requirements": requirements,
				"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": o.Name},
				"expireAfter":  "Never",
			}},
			"limits": map[string]any{"cpu": o.CPULimit},
			"disruption": map[string]any{
				"consolidationPolicy": o.ConsolidationPolicy,
				"consolidateAfter":    DurationString(o.ConsolidateAfter),
				"budgets":             []any{map[string]any{"nodes": "100%"}},
			},
		},
	}}
}

// DurationString is d as Karpenter's duration fields take it (whole
// seconds, e.g. "5s").
func DurationString(d time.Duration) string {
	return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
}

// ConditionTrue says whether obj's status has condition typ True (a
// NodePool's or NodeClaim's Ready, for example).
func ConditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// NodeReady says whether node is Ready and carries none of the taints
// Karpenter puts on a node it has not initialized or is disrupting.
func NodeReady(node *v1.Node) bool {
	for _, taint := range node.Spec.Taints {
		if strings.HasPrefix(taint.Key, "karpenter.sh/") {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
