package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The plugin runs the scheduler's cache, never the scheduler: what-if
// feeds the cache a listed copy of the cluster directly. Linking the
// scheduler (its informer factory, its framework runtime, its command's
// options) or the test API server doubled the binary (114 MB against
// 52 MB) for nothing it runs.
func TestLinksNoScheduler(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{
		"k8s.io/kubernetes/pkg/scheduler",
		"k8s.io/kubernetes/pkg/scheduler/framework/runtime",
		"k8s.io/kubernetes/cmd/kube-scheduler/app/options",
		"github.com/caldera-sched/caldera/internal/snapshot",
	} {
		if slices.Contains(deps, banned) {
			t.Errorf("kubectl-caldera links %s", banned)
		}
	}
}
