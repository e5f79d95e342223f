// Package random_test plays seeded random scenarios against the real
// scheduler (caldera-scheduler's command as a SIGKILL-able process, with the
// shipped manifests/scheduler/config.yaml) on a real in-process apiserver,
// and checks Caldera's invariants continuously and at quiescence. See
// README.md for the invariants and how to replay a seed.
package random_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// The defaults are what `make test` (go test ./test/integration/...) runs:
// a bounded, fixed set of seeds, so CI is reproducible and within budget.
// `make test-random SEEDS=N SEED=S` runs seeds S .. S+N-1.
var (
	seedFlag  = flag.Uint64("random.seed", 1, "first seed to play")
	seedsFlag = flag.Int("random.seeds", 2, "number of consecutive seeds to play, from -random.seed")
	// traceFlag shows what a passing seed did: a pass proves little if,
	// say, a gang never bound.
	traceFlag = flag.Bool("random.trace", false, "log the trace and the final state of passing seeds too")
)

// TestMain lets the test binary double as caldera-scheduler: each seed runs
// the scheduler as a separate process (harness.StartSchedulerProcess) so
// that it can SIGKILL it mid-scenario.
func TestMain(m *testing.M) {
	harness.RunSchedulerProcess()
	os.Exit(m.Run())
}

// TestRandom starts one control plane and plays each seed as a subtest
// named seed=<n>, one after the other (nodes are cluster-scoped).
func TestRandom(t *testing.T) {
	env := harness.Start(t)
	for i := range *seedsFlag {
		seed := *seedFlag + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			playSeed(t, env, seed)
		})
	}
}

// run is one seed being played.
type run struct {
	env       *harness.Env
	sc        *scenario
	ns        string
	trace     *trace
	nodes     []string        // created node names, by scenario index
	nodeNames map[string]bool // the same, as a set

	mu       sync.Mutex
	proc     *harness.SchedulerProcess
	restarts [][2]time.Time  // [kill, ready] of each restart
	demand   []time.Time     // when a submit, ungate or minMember change added demand
	ready    time.Time       // the last scheduler start became ready
	delUIDs  map[string]bool // pods the generator deleted
	// owners are the current owner objects of annotated gangs, by group
	// name; goneOwners those the generator deleted (collectGarbage).
	owners     map[string]types.UID
	goneOwners map[types.UID]bool
	// happenings are the actions and the room coming back, binds the
	// bindings, in the order seen (reservations_test.go).
	happenings []happening
	binds      []happening

	runner *runner // the kubelet stand-in for bounded pods
}

// schedulerOptions configure the scheduler process the scenario runs
// against: the shipped configuration, with lending as the seed says.
func (s *scenario) schedulerOptions() []harness.SchedulerOption {
	if !s.Lend {
		return nil
	}
	return []harness.SchedulerOption{harness.WithPluginArgs("CalderaEnqueue", map[string]any{"lendIdleRoom": true})}
}

func playSeed(t *testing.T, env *harness.Env, seed uint64) {
	began := time.Now()
	sc := Generate(seed)
	r := &run{
		env: env, sc: sc, trace: newTrace(), nodeNames: map[string]bool{},
		delUIDs: map[string]bool{}, owners: map[string]types.UID{}, goneOwners: map[types.UID]bool{},
	}
	r.runner = newRunner(r)
	r.trace.logf("scenario %s", sc.describe())
	r.ns = env.Namespace(t)
	for i, n := range sc.Nodes {
		node := env.AddNodes(t, 1, fmt.Sprint(n.CPU), "64Gi", harness.NodeLabels(n.Labels),
			harness.NodeNamePrefix(fmt.Sprintf("r%d-n%d", seed, i)))[0]
		r.nodes = append(r.nodes, node.Name)
		r.nodeNames[node.Name] = true
	}
	for _, q := range sc.Queues {
		env.CreateQueue(t, q.Name, q.apiSpec())
	}
	// Stands in for the kubelet: evicted pods finish terminating.
	env.CountDeletions(t, r.ns)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r.proc = env.StartSchedulerProcess(t, sc.schedulerOptions()...)
	r.ready = time.Now()
	r.trace.start = time.Now()
	r.trace.logf("scheduler process %d ready", r.proc.Pid())
	w, watchDone := startWatcher(ctx, r)

	r.play(ctx, t)
	r.quiesce(ctx, t, w)
	r.checkRecount(ctx, t)
	cancel()
	<-watchDone
	w.finishReservations()

	final, err := w.snapshot(context.Background())
	state := ""
	if err == nil {
		state = final.state()
	}
	t.Logf("seed %d: %d actions, %d violations, %v in all", seed, len(sc.Actions), len(r.trace.failed()), time.Since(began).Round(time.Second))
	if vs := r.trace.failed(); len(vs) == 0 && *traceFlag {
		t.Logf("--- trace (time since the scheduler was ready)\n%s\n--- state at the end\n%s", r.trace, state)
	}
	if vs := r.trace.failed(); len(vs) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "seed %d broke %d invariant(s):\n", seed, len(vs))
		for _, v := range vs {
			fmt.Fprintf(&b, "  [%v] %s: %s\n", v.At, v.Invariant, firstLine(v.Detail))
		}
		fmt.Fprintf(&b, "replay: %s\n", replayCommand(seed))
		fmt.Fprintf(&b, "--- trace (time since the scheduler was ready)\n%s\n", r.trace)
		fmt.Fprintf(&b, "--- state at the end\n%s", state)
		t.Error(b.String())
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// play runs the actions at their times. The timeline is the scenario's own
// pace (actions are not waiting for conditions); an action that takes long
// (a restart) delays the ones after it.
func (r *run) play(ctx context.Context, t *testing.T) {
	for _, a := range r.sc.Actions {
		if d := time.Until(r.trace.start.Add(a.At)); d > 0 {
			sleepCtx(ctx, d)
		}
		if ctx.Err() != nil {
			return
		}
		if err := r.do(ctx, t, a); err != nil {
			r.trace.logf("%s: %v", r.describeAction(a), err)
		}
	}
}

func (r *run) describeAction(a action) string {
	switch {
	case a.Kind == actRelabel:
		return fmt.Sprintf("relabel %s", r.nodes[a.Arg])
	case a.Group < 0:
		return string(a.Kind)
	case a.Kind == actSubmit:
		return fmt.Sprintf("submit %s", r.sc.Groups[a.Group])
	case a.Kind == actDeletePod, a.Kind == actMinMember:
		return fmt.Sprintf("%s %s %d", a.Kind, r.sc.Groups[a.Group].Name, a.Arg)
	}
	return fmt.Sprintf("%s %s", a.Kind, r.sc.Groups[a.Group].Name)
}

// restartedWithin says whether a scheduler restart overlapped [from, to].
func (r *run) restartedWithin(from, to time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.restarts {
		if !w[0].After(to) && !w[1].Before(from) {
			return true
		}
	}
	return false
}

// demandWithin says whether some action added demand between from and to.
func (r *run) demandWithin(from, to time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.demand {
		if !at.Before(from) && !at.After(to) {
			return true
		}
	}
	return false
}

func (r *run) lastReady() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}
