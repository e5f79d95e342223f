package harness

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caldera-sched/caldera/internal/localcluster"
	"github.com/caldera-sched/caldera/internal/neighbour"
)

// ExternalScheduler is how a benchmark runs any scheduler binary against the
// environment: a shell command, with {kubeconfig} replaced by the cluster's
// kubeconfig file and {config} by ConfigFile rewritten to reach the cluster.
type ExternalScheduler struct {
	// Command is run with `bash -c` from the repository root.
	Command string
	// ConfigFile is the KubeSchedulerConfiguration behind {config}; it is
	// rewritten with clientConnection.kubeconfig set, leader election off
	// and the client rate raised to QPS.
	ConfigFile string
	// QPS is the client rate (and burst) written into {config}.
	QPS int32
}

// StartExternal starts s's command in a process group of its own, logging to
// a file in the test's temporary directory, and stops the whole group (bash
// may have forked the scheduler) in t.Cleanup: SIGTERM, then SIGKILL after
// 10 s. It returns the command's pid; it does not wait for the scheduler to
// be ready, which only the caller's workload can tell.
func (e *Env) StartExternal(t *testing.T, s ExternalScheduler) (int, error) {
	t.Helper()
	dir := t.TempDir()
	cmdline := strings.ReplaceAll(s.Command, "{kubeconfig}", e.Kubeconfig)
	if strings.Contains(cmdline, "{config}") {
		path := filepath.Join(dir, "scheduler-config.yaml")
		err := localcluster.RewriteSchedulerConfig(s.ConfigFile, path, localcluster.SchedulerConfigChanges{
			Kubeconfig: e.Kubeconfig, QPS: float32(s.QPS), Burst: s.QPS,
		})
		if err != nil {
			return 0, err
		}
		cmdline = strings.ReplaceAll(cmdline, "{config}", path)
	}
	logPath := filepath.Join(dir, "scheduler.log")
	cmd := exec.Command("bash", "-c", cmdline)
	cmd.Dir = e.RepoRoot
	p, err := neighbour.Start(cmd, logPath)
	if err != nil {
		return 0, fmt.Errorf("starting %q: %w", cmdline, err)
	}
	// bash may have exited by cleanup and left what it started running in
	// the group, so the group is signalled all the same.
	p.SignalAfterExit = true
	t.Logf("external scheduler: pid %d: %s (log %s)", p.Pid(), cmdline, logPath)
	t.Cleanup(p.Stop)
	return p.Pid(), nil
}
