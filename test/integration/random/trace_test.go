package random_test

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// trace records what the generator did and what the watch saw, with the time
// since the scenario started, so that a failure can be read as a story: the
// actions (exactly reproducible from the seed) interleaved with the
// scheduler's bindings and evictions (which depend on timing).
type trace struct {
	start time.Time
	mu    sync.Mutex
	lines []string

	violations []violation
	seen       map[string]bool // violation keys already reported
}

// violation is one broken invariant.
type violation struct {
	At        time.Duration
	Invariant string
	Detail    string
}

func newTrace() *trace {
	return &trace{start: time.Now(), seen: map[string]bool{}}
}

func (tr *trace) since() time.Duration { return time.Since(tr.start).Round(time.Millisecond) }

// at is t as the trace shows it: the time since the scheduler was ready.
func (tr *trace) at(t time.Time) time.Duration { return t.Sub(tr.start).Round(time.Millisecond) }

// logf appends one line to the trace.
func (tr *trace) logf(format string, args ...any) {
	line := fmt.Sprintf("%8v  %s", tr.since(), fmt.Sprintf(format, args...))
	tr.mu.Lock()
	tr.lines = append(tr.lines, line)
	tr.mu.Unlock()
}

// fail records a violation of invariant, once per key: a watch that checks
// every 200 ms would otherwise report one lasting breach hundreds of times.
func (tr *trace) fail(invariant, key, format string, args ...any) {
	detail := fmt.Sprintf(format, args...)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.seen[invariant+"/"+key] {
		return
	}
	tr.seen[invariant+"/"+key] = true
	v := violation{At: time.Since(tr.start).Round(time.Millisecond), Invariant: invariant, Detail: detail}
	tr.violations = append(tr.violations, v)
	tr.lines = append(tr.lines, fmt.Sprintf("%8v  VIOLATION %s: %s", v.At, invariant, detail))
}

func (tr *trace) failed() []violation {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]violation(nil), tr.violations...)
}

func (tr *trace) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.lines, "\n")
}

// replayCommand is the one line that plays seed again, alone.
func replayCommand(seed uint64) string {
	return fmt.Sprintf("make test-random SEEDS=1 SEED=%d   # or: go test ./test/integration/random/ -count=1 -v -run 'TestRandom/seed=%d$' -args -random.seed=%d -random.seeds=1", seed, seed, seed)
}
