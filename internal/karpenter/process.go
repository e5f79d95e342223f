package karpenter

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/caldera-sched/caldera/internal/neighbour"
)

// Process is a running child process of another project's binary, in a
// process group of its own so that Stop reaches whatever it started.
type Process struct {
	// Name is what errors call it; LogFile receives its stdout and stderr.
	Name, LogFile string

	proc *neighbour.Process
}

// startProcess starts bin with args and env (added to this process's),
// its output to logPath.
func startProcess(name, bin, logPath string, env []string, args ...string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	proc, err := neighbour.Start(cmd, logPath)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return &Process{Name: name, LogFile: logPath, proc: proc}, nil
}

// Done is closed when the process has exited; Err then says how.
func (p *Process) Done() <-chan struct{} { return p.proc.Done() }

// Err is the process's exit error, once Done is closed.
func (p *Process) Err() error { return p.proc.Err() }

// Stop ends the process group: SIGTERM, then SIGKILL after 10 s. It
// returns once the process has exited.
func (p *Process) Stop() { p.proc.Stop() }

// waitHTTP waits up to timeout for url to answer 200, failing at once if
// the process exits or ctx ends.
func (p *Process) waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s within %v (last: %v; log %s)", p.Name, url, timeout, err, p.LogFile)
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited before it was ready: %v (log %s)", p.Name, p.Err(), p.LogFile)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
