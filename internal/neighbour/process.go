// Package neighbour builds another project's binary (Karpenter, KWOK,
// Volcano's controllers, a scheduler under benchmark), once per process,
// runs it beside Caldera as a child process in a process group of its own,
// and stops it. It is for the sandbox, the integration harness and
// test/perf, never for the shipped binary.
package neighbour

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// DefaultGrace is how long Stop lets a process group exit on SIGTERM before
// it sends SIGKILL: long enough for a controller to shut down cleanly, short
// enough that a hung one does not hold up a test's cleanup for long.
const DefaultGrace = 10 * time.Second

// Process is a running child process, leader of a process group of its own
// so that Stop reaches whatever it started (a shell's forked command, a
// binary's helpers) and not the process that started it.
type Process struct {
	// Grace is how long Stop waits after SIGTERM before SIGKILL; Start sets
	// it to DefaultGrace. Set it, if at all, before Stop is called.
	Grace time.Duration
	// SignalAfterExit makes Stop signal the group even when its leader has
	// already exited, for a leader (a shell) that may have left what it
	// forked running. Without it, Stop does nothing once the leader has
	// exited: the group is then usually empty, and its id, free again, may
	// come to name another group.
	SignalAfterExit bool

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Start starts cmd, as the caller has set it up (path, arguments, Env, Dir)
// but with Stdout and Stderr unset, in a process group of its own, its
// output to a file it creates at logPath and closes when the process exits.
// The errors are os.Create's and cmd.Start's, for the caller to wrap with
// the process's name.
func Start(cmd *exec.Cmd, logPath string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	p := &Process{Grace: DefaultGrace, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id, which is also its group's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited; Err then says how.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (cmd.Wait's), once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop ends the process group: SIGTERM, then SIGKILL after Grace. It
// returns once the leader has exited (and been reaped); other members of
// the group get the same signals but are not waited for, as nothing here
// is their parent.
func (p *Process) Stop() {
	select {
	case <-p.done:
		if !p.SignalAfterExit {
			return
		}
	default:
	}
	// A negative pid signals the whole group, which Setpgid made the
	// leader's pid.
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(p.Grace):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
	}
}
