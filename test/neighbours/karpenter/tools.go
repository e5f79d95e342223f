//go:build tools

// Package tools pins the commands this module builds: Karpenter's KWOK
// cloud provider (sigs.k8s.io/karpenter/kwok), a real Karpenter whose
// instances are Node objects, and the KWOK controller
// (sigs.k8s.io/kwok/cmd/kwok), which plays the kubelet of those nodes.
package tools

import (
	_ "sigs.k8s.io/karpenter/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
