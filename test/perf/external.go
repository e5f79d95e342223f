package perf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/internal/localcluster"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// External runs the workloads against a scheduler started from a command,
// so any scheduler binary can be measured on the same workload.
type External struct {
	// Command is run with `bash -c` once per workload, on each fresh
	// cluster, after these substitutions: {kubeconfig} is the cluster's
	// kubeconfig file; {config} is ConfigFile rewritten to reach the cluster
	// (clientConnection.kubeconfig, QPS 5000, leader election off).
	Command string
	// ConfigFile is the KubeSchedulerConfiguration behind {config}.
	ConfigFile string
	// MetricsURL is the scheduler's /metrics (attempt latency); empty skips
	// it. W5 also reads the held heap from /debug/pprof/heap on its host and
	// port, when the command lets it through.
	MetricsURL string
	// Profile holds the pods' schedulerName and the gang form to use.
	Profile Profile
}

// stopGrace is how long a stopped external scheduler may take to exit
// before it is killed.
const stopGrace = 10 * time.Second

// start writes {config}, starts the command in its own process group and
// stops that group in t.Cleanup.
func (e *External) start(t *testing.T, env *harness.Env) (*schedulerProc, error) {
	dir := t.TempDir()
	cmdline := strings.ReplaceAll(e.Command, "{kubeconfig}", env.Kubeconfig)
	if strings.Contains(cmdline, "{config}") {
		path := filepath.Join(dir, "scheduler-config.yaml")
		if err := writeExternalConfig(e.ConfigFile, env.Kubeconfig, path); err != nil {
			return nil, err
		}
		cmdline = strings.ReplaceAll(cmdline, "{config}", path)
	}
	logPath := filepath.Join(dir, "scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("bash", "-c", cmdline)
	cmd.Dir = env.RepoRoot
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %q: %w", cmdline, err)
	}
	t.Logf("external scheduler: pid %d: %s (log %s)", cmd.Process.Pid, cmdline, logPath)
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		// The whole group: bash may have forked the scheduler.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	p := &schedulerProc{pid: cmd.Process.Pid}
	if e.MetricsURL != "" {
		if p.endpoints, err = newSchedulerEndpoints(e.MetricsURL); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// writeExternalConfig rewrites the configuration at src to reach the
// cluster through kubeconfig, with leader election off and QPS raised.
func writeExternalConfig(src, kubeconfig, dst string) error {
	return localcluster.RewriteSchedulerConfig(src, dst, localcluster.SchedulerConfigChanges{
		Kubeconfig: kubeconfig,
		QPS:        schedulerQPS,
		Burst:      schedulerQPS,
	})
}
