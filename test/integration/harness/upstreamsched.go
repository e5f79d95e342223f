package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/caldera-sched/caldera/internal/neighbour"
)

// Another scheduler in the cluster: upstream's kube-scheduler, unmodified,
// as a process of its own beside Caldera's, the way a cluster runs the
// default scheduler next to a second one. It is built from k8s.io/kubernetes
// at the version Caldera compiles against (its main package is in the same
// module, so Go's build cache makes this a link), and schedules the pods
// that name "default-scheduler". Nothing here plays its part.

// upstreamSchedulerMain is upstream's kube-scheduler command.
const upstreamSchedulerMain = "k8s.io/kubernetes/cmd/kube-scheduler"

// buildUpstreamScheduler builds kube-scheduler into
// <root>/_output/neighbours, once per test process.
func buildUpstreamScheduler(root string) (string, error) {
	bin := filepath.Join(root, neighbour.OutputDir, "kube-scheduler")
	return bin, neighbour.Build(neighbour.Binary{Dir: root, Main: upstreamSchedulerMain, Out: bin})
}

// StartUpstreamScheduler starts upstream's kube-scheduler against e with its
// default configuration (one profile, default-scheduler), leader election
// off and no serving port. It is stopped when the test ends; its log is
// printed when the test failed. It does not wait for the scheduler to be
// ready: a pod it binds is the only sign a test needs.
func (e *Env) StartUpstreamScheduler(t *testing.T) {
	t.Helper()
	bin, err := buildUpstreamScheduler(e.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "kube-scheduler.log")
	cmd := exec.Command(bin,
		"--kubeconfig="+e.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--v=2",
	)
	p, err := neighbour.Start(cmd, logPath)
	if err != nil {
		t.Fatalf("starting kube-scheduler: %v", err)
	}
	t.Logf("upstream kube-scheduler: pid %d (log %s)", p.Pid(), logPath)
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("kube-scheduler log (last 8 KiB):\n%s", tail(b, 8<<10))
			}
		}
	})
}
