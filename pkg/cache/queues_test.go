package cache

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qfake "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned/fake"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/status"
)

// ---------------------------------------------------------------------------
// Admission state without informers.

// testProfile is the scheduler profile that enables admission in these tests;
// pods are ours when their schedulerName names it.
const testProfile = "caldera-test"

// newAdmissionCache builds a test cache with queue admission enabled, fed
// directly: Queue, Namespace and pod events are delivered by calling the
// handlers, and passes by calling AdmissionPass with an explicit time.
func newAdmissionCache(tb testing.TB, opts admission.Options, queues ...*qapi.Queue) (*Cache, *fakeHandle, *qfake.Clientset) {
	c, h := newTestCache(tb)
	objs := make([]runtime.Object, 0, len(queues))
	for _, q := range queues {
		objs = append(objs, q)
	}
	qc := qfake.NewSimpleClientset(objs...)
	enableAdmission(c, opts, qc)
	for _, q := range queues {
		c.SetQueue(q, false)
	}
	return c, h, qc
}

func enableAdmission(c *Cache, opts admission.Options, qc *qfake.Clientset) {
	if opts.DefaultQueue == "" {
		opts.DefaultQueue = qapi.DefaultQueueName
	}
	c.mu.Lock()
	c.adm = admission.NewState(opts, observeAdmissionWait, testProfile)
	c.adm.AttachLocked(&c.feasible, c.groups, c.dirty, c.membersSynced.fired())
	c.mu.Unlock()
	wiringOf(c).queues = qc
}

// noticePendingLocked runs the admission side's notice of pending verdicts
// (admission.State.NoticePendingLocked) as the status writer's pull does,
// for the tests that drive it between passes.
func (c *Cache) noticePendingLocked(now time.Time) { c.adm.NoticePendingLocked(now, c.dirty) }

// singletons is the usual configuration: pods without a PodGroup need admission.
var singletons = admission.Options{AdmitSingletons: true, StarvationThreshold: -1}

type queueOpt func(*qapi.Queue)

func mkQueue(name string, opts ...queueOpt) *qapi.Queue {
	q := &qapi.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       qapi.QueueSpec{Weight: 1, State: qapi.QueueStateOpen},
	}
	for _, o := range opts {
		o(q)
	}
	return q
}

func weight(w int32) queueOpt { return func(q *qapi.Queue) { q.Spec.Weight = w } }
func capability(cpuQ string) queueOpt {
	return func(q *qapi.Queue) { q.Spec.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuQ)} }
}
func parent(p string) queueOpt       { return func(q *qapi.Queue) { q.Spec.Parent = p } }
func queuePriority(p int32) queueOpt { return func(q *qapi.Queue) { q.Spec.Priority = p } }
func state(s qapi.QueueState) queueOpt {
	return func(q *qapi.Queue) { q.Spec.State = s }
}

// ours makes a pod one of testProfile's.
func ours(p *v1.Pod) { p.Spec.SchedulerName = testProfile }

// inQueue labels a pod with a queue.
func inQueue(q string) podOpt {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		if q == "" {
			delete(p.Labels, qapi.QueueLabel)
		} else {
			p.Labels[qapi.QueueLabel] = q
		}
	}
}

// single is a pod of ours without a PodGroup.
func single(ns, name string, opts ...podOpt) *v1.Pod {
	return mkPod(ns, name, "", append([]podOpt{ours}, opts...)...)
}

// memberOf is a pod of ours in PodGroup group.
func memberOf(ns, name, group string, opts ...podOpt) *v1.Pod {
	return mkPod(ns, name, group, append([]podOpt{ours}, opts...)...)
}

func pgQueue(q string) pgOpt {
	return func(pg *v1alpha1.PodGroup) {
		if pg.Labels == nil {
			pg.Labels = map[string]string{}
		}
		pg.Labels[qapi.QueueLabel] = q
	}
}

func admittedAt(pg *v1alpha1.PodGroup) {
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[qapi.AdmittedAtAnnotation] = t0.Add(-time.Minute).Format(time.RFC3339)
}

func mkNamespace(name, queueName string) *v1.Namespace {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if queueName != "" {
		ns.Labels = map[string]string{qapi.QueueLabel: queueName}
	}
	return ns
}

// Pod events as both informers deliver them: the cache's member informer
// (onPod, which ignores pods without the PodGroup label) and the scheduler's
// pod informer (onAnyPod).
func podEvent(c *Cache, p *v1.Pod) {
	add(c, p)
	c.onAnyPod(p, false)
}

func podDelete(c *Cache, p *v1.Pod) {
	del(c, p)
	c.onAnyPod(p, true)
}

func pass(c *Cache, at time.Time) { c.AdmissionPass(logger, at) }

type verdict struct {
	ok  bool
	msg string
}

func admitted(c *Cache, p *v1.Pod) verdict {
	ok, msg := c.Admitted(p)
	return verdict{ok, msg}
}

func wantAdmitted(t *testing.T, c *Cache, want verdict, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		if got := admitted(c, p); got != want {
			t.Errorf("Admitted(%s) = %+v, want %+v", p.Name, got, want)
		}
	}
}

// unitOf returns a copy of the admission unit of key, or nil.
func unitOf(c *Cache, key queue.Key) *admission.Unit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u := c.adm.Units[key]
	if u == nil {
		return nil
	}
	cp := *u
	cp.Held, cp.Inflight, cp.Request = u.Held.Clone(), u.Inflight.Clone(), u.Request.Clone()
	return &cp
}

// usageOf returns a queue's allocated and inflight amounts.
func usageOf(c *Cache, q string) (allocated, inflight resources.List) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u := c.adm.Usage[q]
	if u == nil {
		return nil, nil
	}
	return u.Allocated.Clone(), u.Inflight.Clone()
}

// cpuOf reads a list's cpu in millicores.
func cpuOf(l resources.List) int64 { return l[resources.CPU] }

// wantUsage checks a queue's cpu allocated and inflight, in cores.
func wantUsage(t *testing.T, c *Cache, q string, allocated, inflight int64) {
	t.Helper()
	a, i := usageOf(c, q)
	if cpuOf(a) != allocated*1000 || cpuOf(i) != inflight*1000 {
		t.Errorf("queue %s: cpu allocated %dm inflight %dm, want %d and %d cores", q, cpuOf(a), cpuOf(i), allocated, inflight)
	}
}

// activatedPods flattens and sorts the pods activated since the last call.
func activatedPods(h *fakeHandle) []string {
	var out []string
	for _, call := range h.activations() {
		out = append(out, call...)
	}
	sort.Strings(out)
	return out
}

// pendingWrites drains the admission writes queued for the status leader.
func pendingWrites(c *Cache) []status.Admission {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adm.TakeAdmissionWritesLocked()
}

// recount recomputes every admission aggregate from the per-pod and per-unit
// records and reports where the incrementally kept ones differ.
func recount(c *Cache) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a := c.adm
	var errs []string
	used, outside := resources.List{}, resources.List{}
	alloc := map[string]resources.List{}
	held := map[queue.Key]resources.List{}
	for uid, p := range a.Pods {
		if u := a.Units[p.Unit]; !p.Unit.IsZero() && u != nil && u.Queue != p.Queue {
			errs = append(errs, fmt.Sprintf("pod %s of unit %s is accounted in queue %q, its unit in %q", uid, p.Unit, p.Queue, u.Queue))
		}
		if !p.Bound {
			continue
		}
		used.Add(p.Req)
		if p.Queue != "" {
			alloc[p.Queue] = alloc[p.Queue].Add(p.Req)
		} else {
			outside.Add(p.Req)
		}
		if !p.Unit.IsZero() {
			held[p.Unit] = held[p.Unit].Add(p.Req)
		}
	}
	if !used.Equal(a.Used) {
		errs = append(errs, fmt.Sprintf("cluster used %v, recount %v", a.Used, used))
	}
	if !outside.Equal(a.Outside) {
		errs = append(errs, fmt.Sprintf("held outside the queues %v, recount %v", a.Outside, outside))
	}
	infl := map[string]resources.List{}
	for k, u := range a.Units {
		if !u.Held.Equal(held[k]) {
			errs = append(errs, fmt.Sprintf("unit %s holds %v, recount %v", k, u.Held, held[k]))
		}
		want := resources.List{}
		// A gang that started (had minMember bound) or has no unfinished
		// member left needs no more room.
		if u.Admitted && !u.Started && (u.Gang == nil || u.Gang.Counts.Active > 0) {
			for r, v := range u.Request {
				if d := v - held[k][r]; d > 0 {
					want[r] = d
				}
			}
		}
		if !u.Inflight.Equal(want) {
			errs = append(errs, fmt.Sprintf("unit %s (admitted %v) has inflight %v, recount %v", k, u.Admitted, u.Inflight, want))
		}
		infl[u.Queue] = infl[u.Queue].Add(u.Inflight)
		if _, pending := a.Pending.Get(k); pending == u.Admitted {
			errs = append(errs, fmt.Sprintf("unit %s: admitted %v but pending %v", k, u.Admitted, pending))
		}
		if u.Gang != nil && c.groups[u.Gang.Key] != u.Gang {
			errs = append(errs, fmt.Sprintf("unit %s: its group is not the cache's", k))
		}
	}
	queues := map[string]bool{}
	for q := range a.Usage {
		queues[q] = true
	}
	for q := range alloc {
		queues[q] = true
	}
	for q := range infl {
		queues[q] = true
	}
	for q := range queues {
		var ua, ui resources.List
		if u := a.Usage[q]; u != nil {
			ua, ui = u.Allocated, u.Inflight
		}
		if !ua.Equal(alloc[q]) {
			errs = append(errs, fmt.Sprintf("queue %q allocated %v, recount %v", q, ua, alloc[q]))
		}
		if !ui.Equal(infl[q]) {
			errs = append(errs, fmt.Sprintf("queue %q inflight %v, recount %v", q, ui, infl[q]))
		}
	}
	// Extra demand: each group's waiting members, and per queue the parts
	// of the units the pass has synced (a dirty group's unit may lag).
	demand := map[string]resources.List{}
	for k, u := range a.Units {
		demand[u.ExtraQueue] = demand[u.ExtraQueue].Add(u.ExtraDemand)
		if u.Gang == nil {
			continue
		}
		if _, dirty := a.Demand.Dirty[u.Gang.Key]; dirty {
			continue
		}
		var want resources.List
		if u.Admitted && u.Started {
			for _, m := range u.Gang.Members {
				if gangbook.Waiting(m) {
					want = want.Add(m.Request)
				}
			}
		}
		if !u.ExtraDemand.Equal(want) || (len(want) > 0 && u.ExtraQueue != u.Queue) {
			errs = append(errs, fmt.Sprintf("unit %s: extra demand %v in queue %q, recount %v in %q", k, u.ExtraDemand, u.ExtraQueue, want, u.Queue))
		}
	}
	for q, l := range demand {
		if !l.Equal(a.Demand.ByQueue[q]) {
			errs = append(errs, fmt.Sprintf("queue %q extra demand %v, recount %v", q, a.Demand.ByQueue[q], l))
		}
	}
	for q, l := range a.Demand.ByQueue {
		if _, ok := demand[q]; !ok {
			errs = append(errs, fmt.Sprintf("queue %q extra demand %v, recount none", q, l))
		}
	}
	for k, g := range c.groups {
		var want resources.List
		for _, m := range g.Members {
			if gangbook.Waiting(m) {
				want = want.Add(m.Request)
			}
		}
		if !g.PendingReq.Equal(want) {
			errs = append(errs, fmt.Sprintf("group %s: waiting members ask %v, recount %v", k, g.PendingReq, want))
		}
	}
	for k, g := range c.groups {
		if _, ok := a.Units[admission.GangUnitKey(k)]; ok != (g.Obj != nil) {
			errs = append(errs, fmt.Sprintf("group %s has PodGroup %v but unit %v", k, g.Obj != nil, ok))
		}
	}
	errs = append(errs, recountQueueCounts(a)...)
	sort.Strings(errs)
	return errs
}

// recountQueueCounts compares the queues' counts of units by state, kept
// as units change, with a walk over every unit.
func recountQueueCounts(a *admission.State) []string {
	want := map[string]*admission.QueueCounts{}
	for _, u := range a.Units {
		n := want[u.Queue]
		if n == nil {
			n = &admission.QueueCounts{}
			want[u.Queue] = n
		}
		switch {
		case !u.Admitted:
			n.Pending++
		case u.Gang != nil && u.Gang.Counts.Succeeded >= int(u.Min) && u.Gang.Counts.Running == 0:
			n.Completed++
		case u.Gang != nil && u.Gang.Counts.Running > 0:
			n.Running++
		case u.Gang == nil && u.Pod.Status.Phase == v1.PodRunning:
			n.Running++
		default:
			n.Admitted++
		}
	}
	var errs []string
	for q := range a.Usage {
		if _, ok := want[q]; !ok {
			want[q] = &admission.QueueCounts{}
		}
	}
	for q, n := range want {
		if got := a.QueueCountsLocked(q); got != *n {
			errs = append(errs, fmt.Sprintf("queue %q counts %+v, recount %+v", q, got, *n))
		}
	}
	return errs
}

func wantConsistent(t *testing.T, c *Cache, when string) {
	t.Helper()
	if errs := recount(c); len(errs) > 0 {
		t.Errorf("%s: admission aggregates differ from a recount:\n  %s", when, strings.Join(errs, "\n  "))
	}
}

// ---------------------------------------------------------------------------
// Queue resolution.
