package karpenter

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// InstanceType is an instance type Karpenter's KWOK provider offers: one
// on-demand offering in zone Zone, linux/amd64. The node Karpenter makes
// of it has CPU and Memory as capacity and, as allocatable, those less the
// provider's fixed kube-reserved (100m CPU, 10Mi memory).
type InstanceType struct {
	Name        string
	CPU, Memory string
	Price       float64 // per hour
}

// Zone is the one zone of the instance types.
const Zone = "test-zone-a"

// DefaultInstanceTypes are 2, 4, 8 and 16 CPU machines with 4Gi per CPU,
// priced by CPU.
func DefaultInstanceTypes() []InstanceType {
	var out []InstanceType
	for _, cpu := range []int{2, 4, 8, 16} {
		out = append(out, InstanceType{
			Name:   fmt.Sprintf("c-%dx-amd64-linux", cpu),
			CPU:    fmt.Sprint(cpu),
			Memory: fmt.Sprintf("%dGi", 4*cpu),
			Price:  0.05 * float64(cpu),
		})
	}
	return out
}

// InstanceTypesJSON is the file Karpenter's --instance-types-file-path
// reads, in the format of the provider's embedded instance_types.json.
func InstanceTypesJSON(its []InstanceType) ([]byte, error) {
	type req struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	type offering struct {
		Price        float64
		Available    bool
		Requirements []req
	}
	type instanceType struct {
		Name             string            `json:"name"`
		Offerings        []offering        `json:"offerings"`
		Architecture     string            `json:"architecture"`
		OperatingSystems []string          `json:"operatingSystems"`
		Resources        map[string]string `json:"resources"`
	}
	var out []instanceType
	for _, it := range its {
		out = append(out, instanceType{
			Name: it.Name,
			Offerings: []offering{{Price: it.Price, Available: true, Requirements: []req{
				{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}},
				{Key: v1.LabelTopologyZone, Operator: "In", Values: []string{Zone}},
			}}},
			Architecture:     "amd64",
			OperatingSystems: []string{"linux"},
			Resources:        map[string]string{"cpu": it.CPU, "memory": it.Memory, "pods": "110"},
		})
	}
	return json.MarshalIndent(out, "", "  ")
}
