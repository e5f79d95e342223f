package perf

import (
	"testing"

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

// start starts the command (harness.StartExternal: {config} rewritten with
// QPS 5000 and leader election off; stopped in t.Cleanup).
func (e *External) start(t *testing.T, env *harness.Env) (*schedulerProc, error) {
	pid, err := env.StartExternal(t, harness.ExternalScheduler{Command: e.Command, ConfigFile: e.ConfigFile, QPS: schedulerQPS})
	if err != nil {
		return nil, err
	}
	p := &schedulerProc{pid: pid}
	if e.MetricsURL != "" {
		if p.endpoints, err = newSchedulerEndpoints(e.MetricsURL); err != nil {
			return nil, err
		}
	}
	return p, nil
}
