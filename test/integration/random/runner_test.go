package random_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// Run-time limits as the scenario declares them, and the kubelet stand-in
// that keeps them. The harness has no kubelets: nothing enforces an
// activeDeadlineSeconds, and nothing ends a pod but the generator. A limit
// is a promise, and a plan over time is only as good as its promises, so
// the runner ends every bounded pod (Succeeded, by a status update) its
// group's Run after it saw the pod bound, always before its limit. A pod
// still running past its limit (the runner's write lagged, say) is
// recorded as overrunning: the scheduler may then move reservations later
// (docs/runlimits.md, "Overrunning a limit"), which excuses it.

// runAnnotation records on each bounded pod how long it runs, for the trace
// and the runner (which reads the spec by the pod's group label anyway).
const runAnnotation = "random.caldera.dev/run-ms"

// overrunMargin is how much earlier than the harness's own count a pod may
// be past its limit in the scheduler's: it counts from when its informer
// saw the pod bound, rounded up to a whole second, which may precede the
// harness's informer by a moment.
const overrunMargin = time.Second

// declareLimit writes member i's limit the way g declares it: the pod
// annotation, activeDeadlineSeconds (the harness's pods have no termination
// grace, so the deadline holds the room for exactly Limit), or both with
// the annotation the smaller. A PodGroup annotation is written with the
// PodGroup (do, actSubmit).
func declareLimit(pod *v1.Pod, g groupSpec, i int) {
	lim := g.memberLimit(i)
	if lim == 0 {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[runAnnotation] = strconv.FormatInt(g.Run.Milliseconds(), 10)
	switch g.LimitVia {
	case limitPodAnnot, limitPartial:
		pod.Annotations[runlimit.Annotation] = strconv.Itoa(lim)
	case limitDeadline:
		pod.Spec.ActiveDeadlineSeconds = ptr.To(int64(lim))
	case limitDeadlineLoose:
		pod.Annotations[runlimit.Annotation] = strconv.Itoa(lim)
		pod.Spec.ActiveDeadlineSeconds = ptr.To(int64(lim + 10))
	}
}

// boundedPod is one bound pod with a limit, as the harness saw it.
type boundedPod struct {
	name     string
	group    string // the generator's
	bound    time.Time
	hold     time.Duration
	finished time.Time // zero while it holds its room
	overrun  bool      // reported in the trace
}

// deadline is when the scheduler may count the pod overdue at the earliest.
func (b *boundedPod) deadline() time.Time { return b.bound.Add(b.hold - overrunMargin) }

// runner is the kubelet stand-in for bounded pods.
type runner struct {
	r  *run
	mu sync.Mutex
	// pods are the bounded pods seen bound, by UID.
	pods map[types.UID]*boundedPod
}

func newRunner(r *run) *runner {
	return &runner{r: r, pods: map[types.UID]*boundedPod{}}
}

// spec is the group of a pod the generator made, nil for another.
func (r *run) spec(p *v1.Pod) (groupSpec, int, bool) {
	name := p.Labels[groupLabel]
	for _, g := range r.sc.Groups {
		if g.Name != name {
			continue
		}
		i := 0
		if !g.Singleton {
			if _, err := fmt.Sscanf(p.Name[len(g.Name):], "-%d", &i); err != nil {
				return groupSpec{}, 0, false
			}
		}
		return g, i, true
	}
	return groupSpec{}, 0, false
}

// bound is called by the watch when it sees pod bound: a bounded pod ends
// Run later, unless something ends it first.
func (rn *runner) bound(ctx context.Context, p *v1.Pod, at time.Time) {
	g, i, ok := rn.r.spec(p)
	if !ok || g.memberLimit(i) == 0 {
		return
	}
	rn.mu.Lock()
	if _, seen := rn.pods[p.UID]; seen {
		rn.mu.Unlock()
		return
	}
	rn.pods[p.UID] = &boundedPod{name: p.Name, group: g.Name, bound: at, hold: time.Duration(g.memberLimit(i)) * time.Second}
	rn.mu.Unlock()
	name, uid := p.Name, p.UID
	time.AfterFunc(g.Run, func() {
		if ctx.Err() != nil || rn.ended(uid) {
			return
		}
		if err := rn.r.setPhaseOf(ctx, name, uid, v1.PodSucceeded); err != nil && ctx.Err() == nil {
			rn.r.trace.logf("  runner: ending %s: %v", name, err)
			return
		}
		rn.r.trace.logf("  %s succeeded after %v (limit %ds)", name, g.Run, g.memberLimit(i))
	})
}

// ended is called by the watch when a pod stops holding room (finished or
// deleted); it reports whether it had already.
func (rn *runner) ended(uid types.UID) bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	b := rn.pods[uid]
	return b != nil && !b.finished.IsZero()
}

func (rn *runner) finished(uid types.UID, at time.Time) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if b := rn.pods[uid]; b != nil && b.finished.IsZero() {
		b.finished = at
	}
}

// overrunWithin names a bounded pod that held its room past its deadline at
// some instant of [from, to], "" for none.
func (rn *runner) overrunWithin(from, to time.Time) string {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	for _, b := range rn.pods {
		d := b.deadline()
		if !d.After(to) && (b.finished.IsZero() || !b.finished.Before(maxTime(from, d))) {
			return b.name
		}
	}
	return ""
}

// noteOverruns logs, once each, the pods past their deadline now.
func (rn *runner) noteOverruns(now time.Time) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	for _, b := range rn.pods {
		if !b.overrun && b.finished.IsZero() && now.After(b.deadline()) {
			b.overrun = true
			rn.r.trace.logf("  %s overruns its limit of %v (bound %v ago)", b.name, b.hold, now.Sub(b.bound).Round(time.Millisecond))
		}
	}
}

// boundAlive says whether some bounded pod holds room now: its end is on
// the scheduler's timeline, so reservations may exist.
func (rn *runner) boundAlive() bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	for _, b := range rn.pods {
		if b.finished.IsZero() {
			return true
		}
	}
	return false
}
