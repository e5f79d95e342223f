package random_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// The cache check: the scheduler process's cache (its SIGUSR1 dump) must
// agree with a recount, a fresh Caldera cache built in the test process from
// the objects the apiserver holds, on every history-independent aggregate.
// harness.RecountCache does this for an in-process scheduler; the scheduler
// here is a process, so its dump is read from the file SIGUSR1 writes, and the
// recount is built the same way (same informer factory, same admission
// options, taken from the dump).

// profiles are the shipped configuration's profiles that run CalderaEnqueue.
var profiles = []string{harness.DefaultSchedulerName, "caldera-scheduler-spread"}

// recountTimeout bounds the wait for the two caches to agree: each sees the
// final objects through its own informers (harness.Env.NewRecount builds the
// recount).
const recountTimeout = 30 * time.Second

// dumpProcess signals p and returns the dump it writes.
func dumpProcess(ctx context.Context, t *testing.T, p *harness.SchedulerProcess) (*cache.CacheDump, error) {
	before := map[string]bool{}
	old, _ := filepath.Glob(filepath.Join(p.DumpDir, "caldera-cache-*.json"))
	for _, f := range old {
		before[f] = true
	}
	p.Signal(t, syscall.SIGUSR1)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		files, _ := filepath.Glob(filepath.Join(p.DumpDir, "caldera-cache-*.json"))
		sort.Strings(files)
		for i := len(files) - 1; i >= 0; i-- {
			if before[files[i]] {
				continue
			}
			data, err := os.ReadFile(files[i])
			if err != nil {
				return nil, err
			}
			d := &cache.CacheDump{}
			return d, json.Unmarshal(data, d)
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	return nil, fmt.Errorf("no cache dump in %s within 10s of SIGUSR1", p.DumpDir)
}

// checkRecount waits until the process's cache agrees with a recount and
// records a violation with both when it does not.
func (r *run) checkRecount(ctx context.Context, t *testing.T) {
	d, err := dumpProcess(ctx, t, r.proc)
	if err != nil {
		r.trace.fail("cache-recount", "dump", "%v", err)
		return
	}
	fresh, err := r.env.NewRecount(ctx, d.Options, profiles)
	if err != nil {
		r.trace.fail("cache-recount", "start", "%v", err)
		return
	}
	var got, want string
	deadline := time.Now().Add(recountTimeout)
	for {
		if d, err = dumpProcess(ctx, t, r.proc); err != nil {
			r.trace.fail("cache-recount", "dump", "%v", err)
			return
		}
		data, err := fresh.Dump()
		if err != nil {
			r.trace.fail("cache-recount", "dump", "%v", err)
			return
		}
		fd := &cache.CacheDump{}
		if err := json.Unmarshal(data, fd); err != nil {
			r.trace.fail("cache-recount", "dump", "%v", err)
			return
		}
		got, want = render(harness.AggregatesOf(d)), render(harness.AggregatesOf(fd))
		if got == want {
			r.trace.logf("the scheduler's cache agrees with a recount (%d groups, %d queues)", len(d.Groups), len(d.Queues))
			return
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		sleepCtx(ctx, time.Second)
	}
	r.trace.fail("cache-recount", "differ", "the scheduler's cache does not agree with a recount after %v:\n%s", recountTimeout, diffLines(got, want))
}

func render(v any) string {
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// diffLines shows the lines of the two renderings that differ, with the
// group or queue each belongs to (a full dump is hundreds of lines).
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	key := ""
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if strings.Contains(a, `"Key"`) || strings.Contains(a, `"Name"`) {
			key = strings.TrimSpace(a)
		}
		if a != b {
			out = append(out, fmt.Sprintf("  at %s: scheduler %s | recount %s", key, strings.TrimSpace(a), strings.TrimSpace(b)))
			if len(out) > 40 {
				out = append(out, "  ...")
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
