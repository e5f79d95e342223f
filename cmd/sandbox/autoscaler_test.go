package main

import (
	"strings"
	"testing"
	"time"
)

// --autoscaler without the binaries fails before anything starts, naming
// the make target that builds them; without --autoscaler nothing is
// looked for.
func TestAutoscalerOptionsComplete(t *testing.T) {
	dir := t.TempDir()
	root := func() (string, error) { return dir, nil }
	off := autoscalerOptions{}
	if err := off.complete(root); err != nil {
		t.Fatalf("disabled: %v", err)
	}
	on := autoscalerOptions{enabled: true, cpuLimit: "64", consolidateAfter: 5 * time.Second}
	err := on.complete(root)
	if err == nil || !strings.Contains(err.Error(), "make karpenter") || !strings.Contains(err.Error(), dir+"/bin/karpenter-kwok") {
		t.Fatalf("missing binaries: %v, want an error naming %s/bin/karpenter-kwok and make karpenter", err, dir)
	}
	bad := autoscalerOptions{enabled: true, cpuLimit: "64", consolidateAfter: 100 * time.Millisecond}
	if err := bad.complete(root); err == nil || !strings.Contains(err.Error(), "--consolidate-after") {
		t.Fatalf("sub-second --consolidate-after: %v", err)
	}
}
