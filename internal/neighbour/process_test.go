package neighbour

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// start starts name with args under a test's temporary directory and, so
// that a failing test leaves nothing running, kills its group when the test
// ends.
func start(t *testing.T, name string, args ...string) *Process {
	t.Helper()
	p, err := Start(exec.Command(name, args...), filepath.Join(t.TempDir(), "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-p.Pid(), syscall.SIGKILL) })
	return p
}

// liveMembers counts the processes of group pgid that have not exited.
// Zombies do not count: an orphaned member is reaped by whichever process
// adopts it, which in a container may never happen.
func liveMembers(t *testing.T, pgid int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited since the glob
		}
		// The fields after the command name, which is in parentheses and
		// may hold spaces: state, ppid, pgrp, ...
		fields := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if len(fields) < 3 || string(fields[0]) == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(string(fields[2])); g == pgid {
			n++
		}
	}
	return n
}

// waitGroupGone fails the test unless group pgid has no live member within
// 5 s: members other than the leader die on a signal, but Stop does not wait
// for them.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for liveMembers(t, pgid) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has %d live members", pgid, liveMembers(t, pgid))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signalled is the signal that ended the process, failing the test if none
// did.
func signalled(t *testing.T, p *Process) syscall.Signal {
	t.Helper()
	var exit *exec.ExitError
	if !errors.As(p.Err(), &exit) {
		t.Fatalf("exit error %v, want one from a signal", p.Err())
	}
	ws := exit.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		t.Fatalf("process exited with status %d, want a signal", ws.ExitStatus())
	}
	return ws.Signal()
}

func TestStopEndsProcessOnSIGTERM(t *testing.T) {
	p := start(t, "sleep", "60")
	began := time.Now()
	p.Stop()
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if took := time.Since(began); took >= DefaultGrace {
		t.Errorf("Stop took %v: sleep should end on SIGTERM, not wait for SIGKILL", took)
	}
	if sig := signalled(t, p); sig != syscall.SIGTERM {
		t.Errorf("ended by %v, want SIGTERM", sig)
	}
	waitGroupGone(t, p.Pid())
}

func TestStopReachesTheLeadersChildren(t *testing.T) {
	// The shell waits for its child, as a shell that forked a scheduler
	// does; the child gets SIGTERM only through the group.
	p := start(t, "sh", "-c", "sleep 60 & wait")
	waitMembers(t, p.Pid(), 2)
	p.Stop()
	waitGroupGone(t, p.Pid())
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	// An ignored signal stays ignored across exec, so sleep ignores SIGTERM
	// too.
	p := start(t, "sh", "-c", `trap "" TERM; sleep 60; exit`)
	p.Grace = 300 * time.Millisecond
	// Both running means the trap is set: the shell sets it before it
	// forks sleep (and "; exit" keeps it from exec-ing sleep in its place).
	waitMembers(t, p.Pid(), 2)
	began := time.Now()
	p.Stop()
	if took := time.Since(began); took < p.Grace {
		t.Errorf("Stop took %v, less than the grace of %v", took, p.Grace)
	}
	if sig := signalled(t, p); sig != syscall.SIGKILL {
		t.Errorf("ended by %v, want SIGKILL", sig)
	}
	waitGroupGone(t, p.Pid())
}

func TestStopAfterLeaderExit(t *testing.T) {
	// The shell exits at once, leaving sleep in its group.
	p := start(t, "sh", "-c", "sleep 60 &")
	<-p.Done()
	waitMembers(t, p.Pid(), 1)
	p.Stop()
	time.Sleep(200 * time.Millisecond)
	if n := liveMembers(t, p.Pid()); n != 1 {
		t.Fatalf("without SignalAfterExit, Stop left %d live members of the exited leader's group, want 1 (untouched)", n)
	}
	p.SignalAfterExit = true
	p.Stop()
	waitGroupGone(t, p.Pid())
}

// waitMembers waits up to 5 s for group pgid to have n live members.
func waitMembers(t *testing.T, pgid, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for liveMembers(t, pgid) != n {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d has %d live members, want %d", pgid, liveMembers(t, pgid), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
