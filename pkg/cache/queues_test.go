package cache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qfake "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned/fake"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/gang"
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
	sort.Strings(errs)
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

func TestAdmissionQueueResolution(t *testing.T) {
	cases := []struct {
		name    string
		pgQueue string // "" for none; "-" for a singleton (no PodGroup)
		podQ    string
		nsQ     string
		want    string
	}{
		{name: "PodGroup label beats pod and namespace", pgQueue: "from-pg", podQ: "from-pod", nsQ: "from-ns", want: "from-pg"},
		{name: "pod label beats namespace", podQ: "from-pod", nsQ: "from-ns", want: "from-pod"},
		{name: "namespace label", nsQ: "from-ns", want: "from-ns"},
		{name: "default queue", want: "fallback"},
		{name: "singleton: pod label beats namespace", pgQueue: "-", podQ: "from-pod", nsQ: "from-ns", want: "from-pod"},
		{name: "singleton: namespace label", pgQueue: "-", nsQ: "from-ns", want: "from-ns"},
		{name: "singleton: default queue", pgQueue: "-", want: "fallback"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, h, _ := newAdmissionCache(t, admission.Options{AdmitSingletons: true, DefaultQueue: "fallback"})
			c.ApplyNode(logger, mkNode("n1", "16"))
			c.ApplyNamespace(mkNamespace("ns", tc.nsQ))
			var pods []*v1.Pod
			uk := queue.PodUnit("ns", "p0")
			if tc.pgQueue == "-" {
				pods = []*v1.Pod{single("ns", "p0", inQueue(tc.podQ))}
			} else {
				var opts []pgOpt
				if tc.pgQueue != "" {
					opts = append(opts, pgQueue(tc.pgQueue))
				}
				addPG(c, mkPG("ns", "g", 2, opts...))
				pods = []*v1.Pod{memberOf("ns", "p0", "g", inQueue(tc.podQ)), memberOf("ns", "p1", "g", inQueue(tc.podQ))}
				uk = queue.GroupUnit("ns", "g")
			}
			for _, p := range pods {
				podEvent(c, p)
			}
			// A queue no Queue object has yet is folded into MissingQueue,
			// the name it asked for kept (the default queue is not folded).
			if u := unitOf(c, uk); u == nil || (u.Queue != tc.want && (u.Queue != admission.MissingQueue || u.Asked != tc.want)) {
				t.Fatalf("unit %s: %+v, want it in queue %q", uk, u, tc.want)
			}
			h.activations()

			// The queue does not exist yet: the group waits, and says why.
			pass(c, t0)
			wantAdmitted(t, c, verdict{false, "queue " + tc.want + " not found"}, pods...)
			if got := activatedPods(h); len(got) != 0 {
				t.Errorf("activated %v before the queue exists", got)
			}
			// Created after its groups: the next pass admits them.
			c.SetQueue(mkQueue(tc.want), false)
			if u := unitOf(c, uk); u == nil || u.Queue != tc.want || u.Asked != "" {
				t.Fatalf("unit %s after its Queue was created: %+v, want it in queue %q", uk, u, tc.want)
			}
			pass(c, t0.Add(time.Second))
			wantAdmitted(t, c, verdict{true, ""}, pods...)
			if got, want := activatedPods(h), names(pods...); !slices.Equal(got, want) {
				t.Errorf("activated %v, want %v", got, want)
			}
			wantUsage(t, c, tc.want, 0, int64(len(pods)))
			wantConsistent(t, c, "after admission")
		})
	}
}

func TestAdmissionNamespaceLabelMovesUnits(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"), mkQueue("team"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 2))
	g0, g1 := memberOf("ns", "g0", "g"), memberOf("ns", "g1", "g")
	s0, s1 := single("ns", "s0"), single("ns", "s1")
	pinned := single("ns", "pinned", inQueue("default"))
	for _, p := range []*v1.Pod{g0, g1, s0, s1, pinned} {
		podEvent(c, p)
	}
	pass(c, t0)
	// One of each holds a node, the others are admitted and waiting for one.
	podEvent(c, next(g0, boundTo("n1")))
	podEvent(c, next(s0, boundTo("n1")))
	podEvent(c, next(pinned, boundTo("n1")))
	wantUsage(t, c, "default", 3, 2)
	wantConsistent(t, c, "before the label")

	c.ApplyNamespace(mkNamespace("ns", "team"))
	wantUsage(t, c, "team", 2, 2)
	wantUsage(t, c, "default", 1, 0)
	wantConsistent(t, c, "after the namespace was labelled")
	for _, k := range []queue.Key{queue.GroupUnit("ns", "g"), queue.PodUnit("ns", "s0"), queue.PodUnit("ns", "s1")} {
		if u := unitOf(c, k); u == nil || u.Queue != "team" {
			t.Errorf("unit %s: %+v, want it in queue team", k, u)
		}
	}
	// Deleting the bound pods subtracts from the queue they moved to.
	podDelete(c, next(g0, boundTo("n1")))
	podDelete(c, next(s0, boundTo("n1")))
	// g1 still needs the gang's whole minimum.
	wantUsage(t, c, "team", 0, 3)
	c.DeleteNamespace(mkNamespace("ns", "team"))
	wantUsage(t, c, "default", 1, 3)
	wantUsage(t, c, "team", 0, 0)
	wantConsistent(t, c, "after the namespace was deleted")
}

// ---------------------------------------------------------------------------
// Admission decisions.

func TestAdmissionWeightedShares(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("a", weight(1)), mkQueue("b", weight(3)))
	c.ApplyNode(logger, mkNode("n1", "16"))
	pods := map[string][]*v1.Pod{}
	for _, q := range []string{"a", "b"} {
		for i := range 20 {
			p := single("ns", fmt.Sprintf("%s%02d", q, i), inQueue(q), createdAt(t0.Add(time.Duration(i)*time.Second)))
			pods[q] = append(pods[q], p)
			podEvent(c, p)
		}
	}
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue a"}, pods["a"][0])
	if got := activatedPods(h); len(got) != 0 {
		t.Fatalf("activated %v before any pass", got)
	}

	pass(c, t0)
	counts := map[string]int{}
	var want []string
	for q, ps := range pods {
		for _, p := range ps {
			if ok, _ := c.Admitted(p); ok {
				counts[q]++
				want = append(want, p.Namespace+"/"+p.Name)
			}
		}
	}
	if counts["a"] != 4 || counts["b"] != 12 {
		t.Fatalf("admitted %v, want a:4 b:12", counts)
	}
	// Oldest first within a queue.
	wantAdmitted(t, c, verdict{true, ""}, slices.Concat(pods["a"][:4], pods["b"][:12])...)
	sort.Strings(want)
	if got := activatedPods(h); !slices.Equal(got, want) {
		t.Errorf("activated\n %v\nwant\n %v", got, want)
	}
	wantAdmitted(t, c, verdict{false, "queue a: cpu request 1 exceeds remaining deserved share 0"}, pods["a"][4])
	wantUsage(t, c, "a", 0, 4)
	wantUsage(t, c, "b", 0, 12)
	wantConsistent(t, c, "after the pass")

	// Another pass admits nothing more: the room is inflight.
	pass(c, t0.Add(time.Second))
	if got := activatedPods(h); len(got) != 0 {
		t.Errorf("second pass activated %v", got)
	}
	// Binding turns inflight into allocated, and the share follows it.
	for _, p := range pods["b"][:12] {
		podEvent(c, next(p, boundTo("n1")))
	}
	wantUsage(t, c, "b", 12, 0)
	pass(c, t0.Add(2*time.Second))
	if got := activatedPods(h); len(got) != 0 {
		t.Errorf("pass with a full cluster activated %v", got)
	}
	if got := c.SortInfo(pods["b"][0]); got.QueueShare != 1 {
		t.Errorf("SortInfo(b00).QueueShare = %v, want 1 (12 of 12 cpu)", got.QueueShare)
	}
	// b's pods finish: a gets the cluster.
	for _, p := range pods["b"][:12] {
		podDelete(c, next(p, boundTo("n1"), phase(v1.PodSucceeded)))
	}
	pass(c, t0.Add(3*time.Second))
	counts = map[string]int{}
	for q, ps := range pods {
		for _, p := range ps {
			if ok, _ := c.Admitted(p); ok {
				counts[q]++
			}
		}
	}
	// a demands 20 (4 admitted, 16 pending), b its 8 pending: b's demand
	// caps it at 8, a deserves the other 8.
	if counts["a"] != 8 || counts["b"] != 8 {
		t.Errorf("after b's first pods finished, admitted %v, want a:8 b:8", counts)
	}
	wantConsistent(t, c, "after b finished")
}

func TestAdmissionQueuePriorityInSortInfo(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("hi", queuePriority(10)), mkQueue("lo"))
	p := single("ns", "p", inQueue("hi"))
	podEvent(c, p)
	if got := c.SortInfo(p); got.QueuePriority != 10 {
		t.Errorf("SortInfo(p).QueuePriority = %d, want 10", got.QueuePriority)
	}
	c.SetQueue(mkQueue("hi", queuePriority(3)), false)
	if got := c.SortInfo(p); got.QueuePriority != 3 {
		t.Errorf("after the update, QueuePriority = %d, want 3", got.QueuePriority)
	}
}

func TestAdmissionClosedQueue(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q", state(qapi.QueueStateClosed)))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 2, pgQueue("q")))
	g0, g1, s := memberOf("ns", "g0", "g"), memberOf("ns", "g1", "g"), single("ns", "s", inQueue("q"))
	for _, p := range []*v1.Pod{g0, g1, s} {
		podEvent(c, p)
	}
	h.activations()
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "queue q is closed"}, g0, g1, s)
	if got := activatedPods(h); len(got) != 0 {
		t.Errorf("a closed queue activated %v", got)
	}
	c.SetQueue(mkQueue("q"), false)
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{true, ""}, g0, g1, s)
	if got, want := activatedPods(h), names(g0, g1, s); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	// Closing keeps what is admitted.
	c.SetQueue(mkQueue("q", state(qapi.QueueStateClosed)), false)
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, g0, g1, s)
	wantUsage(t, c, "q", 0, 3)
	// Deleting the queue keeps admitted groups admitted too; new ones wait.
	c.SetQueue(mkQueue("q"), true)
	late := single("ns", "late", inQueue("q"))
	podEvent(c, late)
	pass(c, t0.Add(3*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, g0, s)
	wantAdmitted(t, c, verdict{false, "queue q not found"}, late)
	wantConsistent(t, c, "after the queue was deleted")
}

func TestAdmissionCapability(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("3")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	var pods []*v1.Pod
	for i := range 5 {
		p := single("ns", fmt.Sprint("p", i), inQueue("q"), createdAt(t0.Add(time.Duration(i)*time.Second)))
		pods = append(pods, p)
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, pods[:3]...)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 1 exceeds remaining capability 0"}, pods[3])
	if got, want := activatedPods(h), names(pods[:3]...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	wantUsage(t, c, "q", 0, 3)

	// Binding does not free room: what is held counts as much as what is reserved.
	bound := make([]*v1.Pod, 3)
	for i, p := range pods[:3] {
		bound[i] = next(p, boundTo("n1"), phase(v1.PodRunning))
		podEvent(c, bound[i])
	}
	wantUsage(t, c, "q", 3, 0)
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 1 exceeds remaining capability 0"}, pods[3])
	// A pod finishing does.
	podEvent(c, next(bound[0], phase(v1.PodSucceeded)))
	wantUsage(t, c, "q", 2, 0)
	wantConsistent(t, c, "after a pod finished")
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, pods[3])
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 1 exceeds remaining capability 0"}, pods[4])
	if got, want := activatedPods(h), names(pods[3]); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	// A request larger than the capability can never pass.
	huge := single("ns", "huge", inQueue("q"), cpu("4"), createdAt(t0.Add(-time.Hour)))
	podEvent(c, huge)
	pass(c, t0.Add(3*time.Second))
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 4 exceeds capability 3"}, huge)
	wantConsistent(t, c, "at the end")
}

func TestAdmissionSingletonsDisabled(t *testing.T) {
	c, h, _ := newAdmissionCache(t, admission.Options{}, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	s := single("ns", "s")
	podEvent(c, s)
	wantAdmitted(t, c, verdict{true, ""}, s)
	if u := unitOf(c, queue.PodUnit("ns", "s")); u != nil {
		t.Errorf("a singleton got a unit without AdmitSingletons: %+v", u)
	}
	// Its node still counts against its queue.
	podEvent(c, next(s, boundTo("n1")))
	wantUsage(t, c, "default", 1, 0)
	// Gangs are admitted as usual.
	addPG(c, mkPG("ns", "g", 1))
	m := memberOf("ns", "m", "g")
	podEvent(c, m)
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue default"}, m)
	h.activations()
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, m)
	if got, want := activatedPods(h), names(m); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	// Pods of other schedulers count in the cluster only.
	other := mkPod("ns", "other", "", boundTo("n1"), cpu("5"))
	c.onAnyPod(other, false)
	wantUsage(t, c, "default", 1, 1)
	c.mu.RLock()
	used := cpuOf(c.adm.Used)
	c.mu.RUnlock()
	if used != 6000 {
		t.Errorf("cluster used %dm cpu, want 6000m", used)
	}
	wantConsistent(t, c, "at the end")
}

// ---------------------------------------------------------------------------
// Gangs.

func TestAdmissionGangLifecycle(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	pods := []*v1.Pod{memberOf("ns", "m0", "g"), memberOf("ns", "m1", "g"), memberOf("ns", "m2", "g", cpu("2"))}
	podEvent(c, pods[0])
	podEvent(c, pods[1])
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "waiting for members: 2/3"}, pods[0])
	podEvent(c, pods[2])
	h.activations() // CalderaGang's activation: the gang has its members
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	if got, want := activatedPods(h), names(pods...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	wantUsage(t, c, "q", 0, 4)
	// Members bind one by one; inflight turns into allocated.
	steps := []struct {
		p                   *v1.Pod
		allocated, inflight int64
	}{
		{next(pods[0], boundTo("n1")), 1, 3},
		{next(pods[2], boundTo("n1")), 3, 1},
		{next(pods[1], boundTo("n1")), 4, 0},
		{next(pods[1], boundTo("n1"), phase(v1.PodRunning)), 4, 0},
	}
	for i, s := range steps {
		podEvent(c, s.p)
		wantUsage(t, c, "q", s.allocated, s.inflight)
		wantConsistent(t, c, fmt.Sprint("bind step ", i))
	}
	// The gang completes: it holds nothing and reserves nothing.
	for _, p := range pods {
		podEvent(c, next(p, boundTo("n1"), phase(v1.PodSucceeded)))
	}
	wantUsage(t, c, "q", 0, 0)
	wantConsistent(t, c, "after the gang finished")
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u == nil || !u.Admitted {
		t.Errorf("a finished gang's unit: %+v, want it still admitted", u)
	}
	// The PodGroup goes.
	delPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	if u := unitOf(c, queue.GroupUnit("ns", "g")); u != nil {
		t.Errorf("unit survives its PodGroup: %+v", u)
	}
	wantUsage(t, c, "q", 0, 0)
}

func TestAdmissionReleasedGangGoesBackToPending(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 3, pgQueue("q")))
	addPG(c, mkPG("ns", "other", 2, pgQueue("q"), pgCreatedAt(t0)))
	pods := []*v1.Pod{memberOf("ns", "m0", "g"), memberOf("ns", "m1", "g"), memberOf("ns", "m2", "g")}
	others := []*v1.Pod{memberOf("ns", "o0", "other"), memberOf("ns", "o1", "other")}
	for _, p := range slices.Concat(pods, others) {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, others...)
	wantUsage(t, c, "q", 0, 3)
	if w := pendingWrites(c); len(w) != 1 || !w[0].Admitted || w[0].PodGroup == nil || *w[0].PodGroup != key("ns", "g").Named() {
		t.Errorf("writes after admission = %+v, want one admitted write for ns/g", w)
	}

	// One member is placed and waits for the others, which find no node: the
	// gang is released, so it must stop reserving its queue's room.
	c.Reserve(pods[0])
	h.park(pods[0])
	if r := c.Permit(logger, pods[0], t0, time.Minute, "CalderaGang"); r.Allow {
		t.Fatal("Permit allowed a gang short of its minimum")
	}
	if !c.Release(logger, key("ns", "g"), t0.Add(time.Second), testBackoff, "no fit") {
		t.Fatal("Release did nothing")
	}
	c.Unreserve(logger, pods[0], t0.Add(time.Second), testBackoff, time.Minute) // the rejection's echo
	h.unpark(pods[0])
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue q"}, pods...)
	wantUsage(t, c, "q", 0, 0)
	wantConsistent(t, c, "after the release")
	if w := pendingWrites(c); len(w) != 1 || !w[0].Unadmit || w[0].PodGroup == nil || *w[0].PodGroup != key("ns", "g").Named() {
		t.Errorf("writes after release = %+v, want one unadmit for ns/g", w)
	}

	// While it waits again, a higher-priority pod and the other gang take
	// the room it had.
	vip := single("ns", "vip", inQueue("q"), cpu("2"), priority(10))
	podEvent(c, vip)
	h.activations()
	pass(c, t0.Add(2*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, vip)
	wantAdmitted(t, c, verdict{true, ""}, others...)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 3 exceeds remaining capability 2"}, pods...)
	if got, want := activatedPods(h), names(slices.Concat(others, []*v1.Pod{vip})...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	wantUsage(t, c, "q", 0, 4)
	pendingWrites(c)

	// They finish and go: the released gang is admitted again, and its
	// Event and annotation (which the release removed) are written again.
	podDelete(c, vip)
	for _, p := range others {
		podDelete(c, p)
	}
	delPG(c, mkPG("ns", "other", 2))
	pass(c, t0.Add(3*time.Second))
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	if got, want := activatedPods(h), names(pods...); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}
	wantUsage(t, c, "q", 0, 3)
	if w := pendingWrites(c); len(w) != 1 || !w[0].Admitted || w[0].PodGroup == nil || *w[0].PodGroup != key("ns", "g").Named() {
		t.Errorf("writes after re-admission = %+v, want one admitted write for ns/g (its annotation was removed)", w)
	}
	wantConsistent(t, c, "after re-admission")
	// A release while the gang backs off does nothing.
	if c.Release(logger, key("ns", "g"), t0.Add(4*time.Second), testBackoff, "no fit") {
		t.Error("a gang backing off was released again")
	}
	wantAdmitted(t, c, verdict{true, ""}, pods...)
}

func TestAdmissionAnnotatedGangAtStartup(t *testing.T) {
	c, h := newTestCache(t)
	c.ApplyNode(logger, mkNode("n1", "16"))
	// The cache's informers delivered these before admission was enabled.
	addPG(c, mkPG("ns", "done", 2, admittedAt, pgQueue("q")))
	addPG(c, mkPG("ns", "new", 2, pgQueue("q")))
	done := []*v1.Pod{memberOf("ns", "d0", "done"), memberOf("ns", "d1", "done", boundTo("n1"))}
	fresh := []*v1.Pod{memberOf("ns", "n0", "new"), memberOf("ns", "n1", "new")}
	addAll(c, append(slices.Clone(done), fresh...)...)
	h.activations()

	enableAdmission(c, singletons, qfake.NewSimpleClientset())
	// Known before the Queue is: the annotated gang is admitted without a
	// pass, the other waits.
	wantAdmitted(t, c, verdict{true, ""}, done...)
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue q"}, fresh...)
	// Until the Queue exists, its groups are charged to MissingQueue.
	wantUsage(t, c, admission.MissingQueue, 0, 2)
	// The scheduler's pod informer delivers the pods: the bound one holds.
	for _, p := range append(slices.Clone(done), fresh...) {
		c.onAnyPod(p, false)
	}
	wantUsage(t, c, admission.MissingQueue, 1, 1)
	wantConsistent(t, c, "after the pods")

	// Only room for one more cpu: the annotated gang's inflight counts.
	c.SetQueue(mkQueue("q", capability("3")), false)
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, fresh...)
	if got := activatedPods(h); len(got) != 0 {
		t.Errorf("activated %v", got)
	}
	// An annotation that shows up on a known gang is our own write's echo,
	// or stale: it does not admit. (The update resets the verdict until the
	// next pass.)
	addPG(c, mkPG("ns", "new", 2, pgQueue("q"), admittedAt))
	wantAdmitted(t, c, verdict{false, "waiting for admission to queue q"}, fresh...)
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, fresh...)
	// A PodGroup that arrives annotated after its pods (recreated, say) is
	// admitted without a pass.
	late := memberOf("ns", "l0", "late")
	podEvent(c, late)
	addPG(c, mkPG("ns", "late", 1, pgQueue("q"), admittedAt))
	wantAdmitted(t, c, verdict{true, ""}, late)
	wantUsage(t, c, "q", 1, 2)
	wantConsistent(t, c, "at the end")
}

// ---------------------------------------------------------------------------
// Accounting under event sequences.

func TestAdmissionAccountingSequences(t *testing.T) {
	type step struct {
		name string
		do   func(c *Cache)
		// want: per queue cpu cores allocated and inflight after the step; nil
		// checks only the recount.
		want map[string][2]int64
	}
	s0 := single("ns", "s0", inQueue("a"))
	g0 := memberOf("ns", "g0", "g")
	g1 := memberOf("ns", "g1", "g", cpu("2"))
	pg := mkPG("ns", "g", 2, pgQueue("a"))
	cases := []struct {
		name  string
		steps []step
	}{{
		name: "singleton bound, re-labelled, finished",
		steps: []step{
			{"add", func(c *Cache) { podEvent(c, s0) }, map[string][2]int64{"a": {0, 0}}},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 1}}},
			{"bind", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"resync", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"queue label changes", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"), inQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {1, 0}}},
			{"running", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"), inQueue("b"), phase(v1.PodRunning))) }, map[string][2]int64{"b": {1, 0}}},
			{"succeeded", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"), inQueue("b"), phase(v1.PodSucceeded))) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
			{"deleted after", func(c *Cache) { podDelete(c, next(s0, boundTo("n1"), inQueue("b"), phase(v1.PodSucceeded))) }, map[string][2]int64{"b": {0, 0}}},
		},
	}, {
		name: "admitted singleton deleted before binding",
		steps: []step{
			{"add", func(c *Cache) { podEvent(c, s0) }, nil},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 1}}},
			{"queue label changes", func(c *Cache) { podEvent(c, next(s0, inQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {0, 1}}},
			{"delete", func(c *Cache) { podDelete(c, s0) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
			{"delete again", func(c *Cache) { podDelete(c, s0) }, map[string][2]int64{"b": {0, 0}}},
		},
	}, {
		name: "bound singleton seen at startup is admitted and holds",
		steps: []step{
			{"add bound", func(c *Cache) { podEvent(c, next(s0, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"pass", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {1, 0}}},
			{"tombstone delete", func(c *Cache) { c.onAnyPod(tombstone(next(s0, boundTo("n1"))), true) }, map[string][2]int64{"a": {0, 0}}},
		},
	}, {
		name: "gang bound, member leaves through its label, finishes",
		steps: []step{
			{"PodGroup", func(c *Cache) { addPG(c, pg) }, nil},
			{"members", func(c *Cache) { podEvent(c, g0); podEvent(c, g1) }, map[string][2]int64{"a": {0, 0}}},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 3}}},
			{"bind g1", func(c *Cache) { podEvent(c, next(g1, boundTo("n1"))) }, map[string][2]int64{"a": {2, 1}}},
			{"PodGroup moves to b", func(c *Cache) { addPG(c, mkPG("ns", "g", 2, pgQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {2, 1}}},
			{"bind g0", func(c *Cache) { podEvent(c, next(g0, boundTo("n1"))) }, map[string][2]int64{"b": {3, 0}}},
			{"g1 loses the PodGroup label: a singleton of the default queue",
				func(c *Cache) { podEvent(c, next(g1, boundTo("n1"), label(""))) },
				map[string][2]int64{"b": {1, 0}, "default": {2, 0}}},
			{"g0 finishes: the gang has no member left", func(c *Cache) { podEvent(c, next(g0, boundTo("n1"), phase(v1.PodSucceeded))) },
				map[string][2]int64{"b": {0, 0}, "default": {2, 0}}},
			{"ex-member deleted", func(c *Cache) { podDelete(c, next(g1, boundTo("n1"), label(""))) }, map[string][2]int64{"default": {0, 0}}},
		},
	}, {
		name: "pods before their PodGroup",
		steps: []step{
			{"members bound first", func(c *Cache) {
				podEvent(c, next(g0, boundTo("n1"), inQueue("a")))
				podEvent(c, next(g1, boundTo("n1"), inQueue("a")))
			}, map[string][2]int64{"a": {3, 0}}},
			{"PodGroup in another queue", func(c *Cache) { addPG(c, mkPG("ns", "g", 2, pgQueue("b"))) }, map[string][2]int64{"a": {0, 0}, "b": {3, 0}}},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"b": {3, 0}}},
			{"g0 deleted: g1 is short of the minimum", func(c *Cache) { podDelete(c, next(g0, boundTo("n1"), inQueue("a"))) }, map[string][2]int64{"a": {0, 0}, "b": {2, 0}}},
			{"g1 deleted", func(c *Cache) { podDelete(c, next(g1, boundTo("n1"), inQueue("a"))) }, map[string][2]int64{"a": {0, 0}, "b": {0, 0}}},
		},
	}, {
		name: "PodGroup deleted and recreated under running members",
		steps: []step{
			{"PodGroup", func(c *Cache) { addPG(c, pg) }, nil},
			{"members", func(c *Cache) { podEvent(c, g0); podEvent(c, g1) }, nil},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 3}}},
			{"bind", func(c *Cache) { podEvent(c, next(g0, boundTo("n1"))); podEvent(c, next(g1, boundTo("n1"))) }, map[string][2]int64{"a": {3, 0}}},
			{"PodGroup deleted", func(c *Cache) { delPG(c, pg) }, map[string][2]int64{"a": {3, 0}}},
			{"PodGroup recreated, annotated", func(c *Cache) { addPG(c, mkPG("ns", "g", 2, pgQueue("a"), admittedAt)) }, map[string][2]int64{"a": {3, 0}}},
			{"g1 deleted: g0 is short of the minimum", func(c *Cache) { podDelete(c, next(g1, boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"g0 deleted", func(c *Cache) { podDelete(c, next(g0, boundTo("n1"))) }, map[string][2]int64{"a": {0, 0}}},
		},
	}, {
		name: "singleton joins a gang through its label",
		steps: []step{
			{"singleton", func(c *Cache) { podEvent(c, s0) }, nil},
			{"PodGroup", func(c *Cache) { addPG(c, mkPG("ns", "g", 1, pgQueue("a"))) }, nil},
			{"labelled into the gang", func(c *Cache) { podEvent(c, next(s0, label("g"))) }, nil},
			{"admit", func(c *Cache) { pass(c, t0) }, map[string][2]int64{"a": {0, 1}}},
			{"bind", func(c *Cache) { podEvent(c, next(s0, label("g"), boundTo("n1"))) }, map[string][2]int64{"a": {1, 0}}},
			{"delete", func(c *Cache) { podDelete(c, next(s0, label("g"), boundTo("n1"))) }, map[string][2]int64{"a": {0, 0}}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"), mkQueue("a"), mkQueue("b"))
			c.ApplyNode(logger, mkNode("n1", "16"))
			for _, s := range tc.steps {
				s.do(c)
				wantConsistent(t, c, "after "+s.name)
				for q, w := range s.want {
					a, i := usageOf(c, q)
					if cpuOf(a) != w[0]*1000 || cpuOf(i) != w[1]*1000 {
						t.Errorf("after %s: queue %s cpu allocated %dm inflight %dm, want %d and %d cores", s.name, q, cpuOf(a), cpuOf(i), w[0], w[1])
					}
				}
			}
		})
	}
}

// A pod that left for a gang must not stay behind as a pending singleton.
func TestAdmissionSingletonLeavesForGang(t *testing.T) {
	c, _, qc := newAdmissionCache(t, singletons, mkQueue("a", capability("1")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	blocker := single("ns", "blocker", inQueue("a"))
	podEvent(c, blocker)
	pass(c, t0)
	s0 := single("ns", "s0", inQueue("a"))
	podEvent(c, s0)
	addPG(c, mkPG("ns", "g", 1, pgQueue("a")))
	podEvent(c, next(s0, label("g")))
	if u := unitOf(c, queue.PodUnit("ns", "s0")); u != nil {
		t.Errorf("the pod's singleton unit survives its joining a gang: %+v", u)
	}
	writer(c).SyncQueues(context.Background())
	st := queueStatus(t, qc, "a")
	if st.Pending != 1 || st.Admitted != 1 {
		t.Errorf("queue a counts pending %d admitted %d, want 1 and 1 (the gang; the blocker)", st.Pending, st.Admitted)
	}
}

// ---------------------------------------------------------------------------
// Events and the admitted-at annotation.

func TestWriteAdmissions(t *testing.T) {
	ctx := context.Background()
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("3")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	pg := mkPG("ns", "g", 2, pgQueue("q"))
	pgc := pgfake.NewSimpleClientset(pg)
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := store.Add(pg); err != nil {
		t.Fatal(err)
	}
	withPodGroups(c, pgc, pglisters.NewPodGroupLister(store))
	// echo delivers the PodGroup as the informer would after a write.
	echo := func() *v1alpha1.PodGroup {
		t.Helper()
		got, err := pgc.SchedulingV1alpha1().PodGroups("ns").Get(ctx, "g", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Update(got); err != nil {
			t.Fatal(err)
		}
		addPG(c, got)
		return got
	}
	patches := func() int {
		n := 0
		for _, a := range pgc.Actions() {
			if a.GetVerb() == "patch" {
				n++
			}
		}
		pgc.ClearActions()
		return n
	}
	addPG(c, pg)
	m0, m1 := memberOf("ns", "m0", "g"), memberOf("ns", "m1", "g")
	s0 := single("ns", "s0", inQueue("q"), createdAt(t0.Add(time.Hour)))
	s1 := single("ns", "s1", inQueue("q"), createdAt(t0.Add(2*time.Hour)))
	for _, p := range []*v1.Pod{m0, m1, s0, s1} {
		podEvent(c, p)
	}
	pass(c, t0)
	h.recorded()
	writer(c).WriteAdmissions(ctx)
	// s0, a singleton admitted in the pass that first saw it, gets no Event.
	want := []recordedEvent{
		{"PodGroup", "ns/g", v1.EventTypeNormal, "Admitted", "admitted to queue q"},
		{"Pod", "ns/s1", v1.EventTypeWarning, "NotAdmitted", "queue q: cpu request 1 exceeds remaining capability 0"},
	}
	if got := h.recorded(); !slices.Equal(got, want) {
		t.Errorf("events\n got %+v\nwant %+v", got, want)
	}
	// A refusal's action names the check it failed.
	if got, want := h.actions, []string{"Admission", "AdmissionCapability"}; !slices.Equal(got, want) {
		t.Errorf("actions %q, want %q", got, want)
	}
	if n := patches(); n != 1 {
		t.Errorf("%d PodGroup patches, want 1 (the annotation)", n)
	}
	if got := echo(); got.Annotations[qapi.AdmittedAtAnnotation] == "" {
		t.Errorf("PodGroup annotations after admission: %v", got.Annotations)
	}
	// Nothing changed: nothing is written.
	writer(c).WriteAdmissions(ctx)
	if got := h.recorded(); len(got) != 0 {
		t.Errorf("events for unchanged decisions: %+v", got)
	}
	if n := patches(); n != 0 {
		t.Errorf("%d PodGroup patches for unchanged decisions", n)
	}

	// A release removes the annotation; re-admission writes it again.
	if !c.Release(logger, key("ns", "g"), t0.Add(time.Second), testBackoff, "no fit") {
		t.Fatal("Release did nothing")
	}
	writer(c).WriteAdmissions(ctx)
	if got := echo(); got.Annotations[qapi.AdmittedAtAnnotation] != "" {
		t.Errorf("PodGroup annotations after release: %v", got.Annotations)
	}
	patches()
	pass(c, t0.Add(2*time.Second))
	writer(c).WriteAdmissions(ctx)
	if got, want := h.recorded(), want[:1]; !slices.Equal(got, want) {
		t.Errorf("events after re-admission\n got %+v\nwant %+v", got, want)
	}
	if got := echo(); got.Annotations[qapi.AdmittedAtAnnotation] == "" {
		t.Errorf("PodGroup annotations after re-admission: %v", got.Annotations)
	}

	// A singleton that was told NotAdmitted is told when it is admitted.
	podDelete(c, s0)
	pass(c, t0.Add(3*time.Second))
	writer(c).WriteAdmissions(ctx)
	wantS1 := []recordedEvent{{"Pod", "ns/s1", v1.EventTypeNormal, "Admitted", "admitted to queue q"}}
	if got := h.recorded(); !slices.Equal(got, wantS1) {
		t.Errorf("events after the waiting singleton's admission\n got %+v\nwant %+v", got, wantS1)
	}
}

// ---------------------------------------------------------------------------
// Queue status.

func queueStatus(t *testing.T, qc *qfake.Clientset, name string) qapi.QueueStatus {
	t.Helper()
	q, err := qc.SchedulingV1alpha1().Queues().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return q.Status
}

// statusUpdates returns the names of the Queues whose status was written since
// the last call.
func statusUpdates(qc *qfake.Clientset) []string {
	var out []string
	for _, a := range qc.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" && a.GetResource().Resource == "queues" {
			out = append(out, u.GetObject().(*qapi.Queue).Name)
		}
	}
	qc.ClearActions()
	sort.Strings(out)
	return out
}

func TestSyncQueueStatus(t *testing.T) {
	ctx := context.Background()
	c, _, qc := newAdmissionCache(t, singletons,
		mkQueue("a", weight(1)), mkQueue("b", weight(3)), mkQueue("idle"), mkQueue("orphan", parent("nope")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	var a, b []*v1.Pod
	for i := range 8 {
		a = append(a, single("ns", fmt.Sprint("a", i), inQueue("a"), createdAt(t0.Add(time.Duration(i)*time.Second))))
		b = append(b, single("ns", fmt.Sprint("b", i), inQueue("b"), createdAt(t0.Add(time.Duration(i)*time.Second))))
	}
	addPG(c, mkPG("ns", "gang", 2, pgQueue("b"), pgCreatedAt(t0.Add(time.Hour))))
	gang := []*v1.Pod{memberOf("ns", "m0", "gang"), memberOf("ns", "m1", "gang")}
	for _, p := range slices.Concat(a, b, gang) {
		podEvent(c, p)
	}
	pass(c, t0)
	// 16 cpu: a demands 8, b demands 10; by weight a gets 4, b 12. b admits
	// its 8 singletons and then its gang (2) and so on.
	for _, p := range a[:2] {
		podEvent(c, next(p, boundTo("n1"), phase(v1.PodRunning)))
	}
	for _, p := range b[:6] {
		podEvent(c, next(p, boundTo("n1"), phase(v1.PodRunning)))
	}
	podEvent(c, next(gang[0], boundTo("n1"), phase(v1.PodRunning)))
	pass(c, t0.Add(time.Second)) // shares follow the binds at the next pass
	qc.ClearActions()
	writer(c).SyncQueues(ctx)
	if got, want := statusUpdates(qc), []string{"a", "b", "idle", "orphan"}; !slices.Equal(got, want) {
		t.Errorf("status written for %v, want %v", got, want)
	}

	sa, sb := queueStatus(t, qc, "a"), queueStatus(t, qc, "b")
	cpuQ := func(rl v1.ResourceList) string {
		q, ok := rl[v1.ResourceCPU]
		if !ok {
			return "-"
		}
		return q.String()
	}
	type view struct {
		allocated, deserved, share           string
		pending, admitted, running, complete int32
	}
	got := map[string]view{
		"a": {cpuQ(sa.Allocated), cpuQ(sa.Deserved), sa.Share, sa.Pending, sa.Admitted, sa.Running, sa.Completed},
		"b": {cpuQ(sb.Allocated), cpuQ(sb.Deserved), sb.Share, sb.Pending, sb.Admitted, sb.Running, sb.Completed},
	}
	want := map[string]view{
		// b demands 10 (8 singletons and the gang's 2), so a deserves the
		// remaining 6 of 16: 6 admitted, 2 of them running.
		"a": {"2", "6", "0.33", 2, 4, 2, 0},
		// b: everything admitted; 6 singletons and the gang (one member
		// bound) hold 7; two singletons wait for nodes.
		"b": {"7", "10", "0.70", 0, 2, 7, 0},
	}
	if !maps.Equal(got, want) {
		t.Errorf("status views\n got %+v\nwant %+v", got, want)
	}
	orphan := queueStatus(t, qc, "orphan")
	var cond *metav1.Condition
	for i := range orphan.Conditions {
		if orphan.Conditions[i].Type == qapi.QueueConditionInvalidParent {
			cond = &orphan.Conditions[i]
		}
	}
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != qapi.ReasonParentNotFound || cond.ObservedGeneration != 1 {
		t.Errorf("orphan InvalidParent condition = %+v, want True/ParentNotFound at generation 1", cond)
	}
	if idle := queueStatus(t, qc, "idle"); idle.Allocated != nil || idle.Pending != 0 || idle.Share != "0.00" {
		t.Errorf("idle queue status = %+v", idle)
	}

	// Without the informer's echo, the cached Queue still has the old status:
	// the same status is written again.
	writer(c).SyncQueues(ctx)
	if got := statusUpdates(qc); len(got) != 4 {
		t.Errorf("second sync without echo wrote %v", got)
	}
	// With it, nothing changed: nothing is written.
	for _, name := range []string{"a", "b", "idle", "orphan"} {
		q, err := qc.SchedulingV1alpha1().Queues().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.SetQueue(q, false)
	}
	writer(c).SyncQueues(ctx)
	if got := statusUpdates(qc); len(got) != 0 {
		t.Errorf("sync after the echo wrote %v, want nothing", got)
	}
	// A change in one queue writes that queue only.
	podEvent(c, next(a[2], boundTo("n1"), phase(v1.PodRunning)))
	writer(c).SyncQueues(ctx)
	if got, want := statusUpdates(qc), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("after a bind in a, status written for %v, want %v", got, want)
	}
	if st := queueStatus(t, qc, "a"); cpuQ(st.Allocated) != "3" || st.Running != 3 || st.Admitted != 3 {
		t.Errorf("queue a status after the bind = %+v", st)
	}
}

// A parent queue's status counts what its children hold.
func TestSyncQueueStatusHierarchy(t *testing.T) {
	ctx := context.Background()
	c, _, qc := newAdmissionCache(t, singletons, mkQueue("parent"), mkQueue("child", parent("parent")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	p := single("ns", "p", inQueue("child"), cpu("2"))
	podEvent(c, p)
	pass(c, t0)
	podEvent(c, next(p, boundTo("n1"), phase(v1.PodRunning)))
	pass(c, t0.Add(time.Second))
	writer(c).SyncQueues(ctx)
	child, par := queueStatus(t, qc, "child"), queueStatus(t, qc, "parent")
	if got := child.Allocated[v1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("child allocated cpu %v, want 2", got.String())
	}
	if got := par.Allocated[v1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("parent allocated cpu %v, want 2 (its child's): status %+v", got.String(), par)
	}
}

// ---------------------------------------------------------------------------
// Concurrency.

// TestAdmissionConcurrent delivers pod events for singletons and gang members
// from several goroutines, each owning its pods as an informer orders each
// object's events, while passes run and readers ask Admitted and SortInfo.
// The aggregates must then equal a recount.
func TestAdmissionConcurrent(t *testing.T) {
	const (
		writers       = 6
		podsPerWriter = 16
		opsPerWriter  = 400
		readers       = 3
	)
	queues := []string{"q0", "q1", "q2"}
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q0", weight(2)), mkQueue("q1", capability("6")), mkQueue("q2"), mkQueue("default"))
	c.ApplyNode(logger, mkNode("n1", "32"))
	groups := []string{"g0", "g1", "g2", "g3"}
	for i, g := range groups {
		addPG(c, mkPG("race", g, 2, pgQueue(queues[i%len(queues)])))
	}

	done := make(chan struct{})
	var readersWG, writersWG sync.WaitGroup
	for r := range readers {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			probes := []*v1.Pod{single("race", "w0-p0"), memberOf("race", "w1-p1", "g1"), single("race", "nobody")}
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				p := probes[(i+r)%len(probes)]
				c.Admitted(p)
				c.SortInfo(p)
				switch i % 8 {
				case 0:
					c.AdmissionPass(logger, t0.Add(time.Duration(i)*time.Millisecond))
				case 3:
					c.SetQueue(mkQueue("q2", weight(int32(1+i%3))), false)
				case 5:
					c.mu.Lock()
					c.noticePendingLocked(t0.Add(time.Duration(i) * time.Millisecond))
					c.mu.Unlock()
					pendingWrites(c)
				}
			}
		}()
	}
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			rng := newRand(uint64(w) + 1)
			pods := make([]*v1.Pod, podsPerWriter)
			for i := range pods {
				name := fmt.Sprintf("w%d-p%d", w, i)
				if i%2 == 0 {
					pods[i] = single("race", name, inQueue(queues[rng.intn(len(queues))]))
				} else {
					pods[i] = memberOf("race", name, groups[rng.intn(len(groups))])
				}
			}
			for range opsPerWriter {
				i := rng.intn(len(pods))
				p := pods[i]
				switch rng.intn(8) {
				case 0:
					podDelete(c, p)
					continue
				case 1:
					p = next(p, boundTo("n1"))
				case 2:
					p = next(p, boundTo("n1"), phase(v1.PodRunning))
				case 3:
					p = next(p, phase(v1.PodSucceeded))
				case 4:
					p = next(p, inQueue(queues[rng.intn(len(queues))]))
				case 5:
					p = next(p, label(groups[rng.intn(len(groups))]))
				case 6:
					p = next(p, label(""))
				}
				pods[i] = p
				if rng.intn(2) == 0 {
					podEvent(c, p)
				} else {
					c.onAnyPod(p, false)
					add(c, p)
				}
				if p.Status.Phase == v1.PodSucceeded {
					pods[i] = next(p, phase(v1.PodPending), boundTo(""))
				}
			}
		}()
	}
	writersWG.Wait()
	close(done)
	readersWG.Wait()
	c.AdmissionPass(logger, t0.Add(time.Hour))
	wantConsistent(t, c, "after the concurrent events")

	c.mu.RLock()
	nUnits, nPods := len(c.adm.Units), len(c.adm.Pods)
	admittedUnits := 0
	for _, u := range c.adm.Units {
		if u.Admitted {
			admittedUnits++
		}
	}
	c.mu.RUnlock()
	if nUnits == 0 || nPods == 0 || admittedUnits == 0 {
		t.Errorf("the test exercised too little: %d units (%d admitted), %d pods", nUnits, admittedUnits, nPods)
	}
	t.Logf("%d units (%d admitted), %d pods accounted", nUnits, admittedUnits, nPods)
}

// Pods accounted without a unit take their queue from their namespace's label
// too: the members of a PodGroup that no longer exists (deleted before this
// scheduler started), and plain pods when singletons bypass admission. Their
// accounts must follow the label when it arrives or changes. The pod and the
// namespace informers deliver in any order, so a scheduler that starts (or
// relists) and sees the pods first would otherwise charge them to the default
// queue for good, and the labelled queue could admit past its capability.
func TestAdmissionNamespaceLabelMovesPodsWithoutUnit(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts admission.Options
		pods func() []*v1.Pod
	}{
		{"members of a missing PodGroup", singletons, func() []*v1.Pod {
			return []*v1.Pod{memberOf("ns", "m0", "gone"), memberOf("ns", "m1", "gone")}
		}},
		{"plain pods without singleton admission", admission.Options{StarvationThreshold: -1}, func() []*v1.Pod {
			return []*v1.Pod{single("ns", "p0"), single("ns", "p1")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newAdmissionCache(t, tc.opts, mkQueue("default"), mkQueue("team"), mkQueue("other"))
			c.ApplyNode(logger, mkNode("n1", "16"))
			pods := tc.pods()
			// A pod with a queue label of its own is not the namespace's.
			pinned := memberOf("ns", "pinned", "gone", inQueue("other"))
			for _, p := range append(pods, pinned) {
				podEvent(c, next(p, boundTo("n1")))
			}
			wantUsage(t, c, "default", 2, 0)
			wantUsage(t, c, "other", 1, 0)

			// The namespace's label arrives after its pods.
			c.ApplyNamespace(mkNamespace("ns", "team"))
			wantUsage(t, c, "team", 2, 0)
			wantUsage(t, c, "default", 0, 0)
			wantUsage(t, c, "other", 1, 0)
			wantConsistent(t, c, "after the namespace was labelled")

			// Later events subtract from the queue the pods moved to.
			podDelete(c, next(pods[0], boundTo("n1")))
			wantUsage(t, c, "team", 1, 0)
			c.ApplyNamespace(mkNamespace("ns", "other"))
			wantUsage(t, c, "other", 2, 0)
			wantUsage(t, c, "team", 0, 0)
			c.DeleteNamespace(mkNamespace("ns", ""))
			wantUsage(t, c, "default", 1, 0)
			wantUsage(t, c, "other", 1, 0)
			wantConsistent(t, c, "after the namespace was deleted")
		})
	}
}

// A pod whose unit is not admitted loses the nominated node its status
// names: gated in PreEnqueue, it runs no cycle that would use or drop it,
// and kube-scheduler would keep that room from every pod of lower priority
// for as long as the unit waits (harness seed 65: a gang of 5-cpu pods,
// preempted for before a restart and refused by fair share since, kept a
// node's room from another queue's gang). An admitted pod keeps its own.
func TestStaleNominationClearedWhileNotAdmitted(t *testing.T) {
	ctx := context.Background()
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("2")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	kube := kubefake.NewClientset()
	h.cs = kube
	nominated := func(p *v1.Pod) { p.Status.NominatedNodeName = "n1" }
	running := single("ns", "running", inQueue("q"), boundTo("n1"), cpu("1"))
	waiting := single("ns", "waiting", inQueue("q"), cpu("2"), nominated, createdAt(t0.Add(time.Hour)))
	fits := single("ns", "fits", inQueue("q"), cpu("1"), nominated)
	for _, p := range []*v1.Pod{running, fits, waiting} {
		if _, err := kube.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{ok: true}, fits)
	if ok, _ := c.Admitted(waiting); ok {
		t.Fatal("the 2-cpu pod was admitted past its queue's capability")
	}
	kube.ClearActions()
	writer(c).WriteAdmissions(ctx)
	// (The refused pod's PodScheduled condition is patched too.)
	var patched []string
	for _, a := range kube.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetSubresource() == "status" && strings.Contains(string(p.GetPatch()), "nominatedNodeName") {
			patched = append(patched, p.GetName())
		}
	}
	if !slices.Equal(patched, []string{"waiting"}) {
		t.Fatalf("nomination patches %v, want the refused pod's alone", patched)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "waiting", metav1.GetOptions{})
	if err != nil || got.Status.NominatedNodeName != "" {
		t.Fatalf("the refused pod's nomination after the write: %q, %v", got.Status.NominatedNodeName, err)
	}
	// Written once: until the pod's update arrives, the next period does
	// not write again; after it, there is nothing left to clear.
	kube.ClearActions()
	writer(c).WriteAdmissions(ctx)
	podEvent(c, got)
	writer(c).WriteAdmissions(ctx)
	if n := len(kube.Actions()); n != 0 {
		t.Errorf("%d more writes after the nomination was cleared", n)
	}
}

// A released gang's members lose the nominations CalderaReclaim made for
// them in the scheduler's memory: gated in PreEnqueue, they run no cycle
// that would replace them, kube-scheduler keeps them through pod updates,
// and they are not in the API for a status patch to remove. An admitted
// unit's nominations stay.
func TestInMemoryNominationDroppedWhenReleased(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "8"))
	c.ApplyNode(logger, mkNode("n2", "8"))
	addPG(c, mkPG("ns", "g", 2, pgQueue("q")))
	m0, m1 := memberOf("ns", "m0", "g", cpu("2")), memberOf("ns", "m1", "g", cpu("2"))
	other := single("ns", "other", inQueue("q"), cpu("1"))
	for _, p := range []*v1.Pod{m0, m1, other} {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{ok: true}, m0, m1, other)
	h.nominateInMemory(t, m1, "n1")
	h.nominateInMemory(t, other, "n2")

	// Admitted: nothing is dropped. (WriteAdmissions, the status leader's
	// period, calls DropGatedNominations; this test cache cannot write the
	// PodGroup Events that period would also write.)
	writer(c).DropGatedNominations()
	if n := len(h.NominatedPodsForNode("n1")) + len(h.NominatedPodsForNode("n2")); n != 2 {
		t.Fatalf("%d nominations left while every unit is admitted, want 2", n)
	}
	// The gang is released: its member's nomination goes, the admitted
	// singleton's stays.
	c.Unschedulable(logger, m0, t0, gang.Backoff{Base: time.Hour, Max: time.Hour}, "0/2 nodes are available: 2 Insufficient cpu.")
	if got := admitted(c, m1); got.ok {
		t.Fatal("the released gang is still admitted")
	}
	writer(c).DropGatedNominations()
	if n := len(h.NominatedPodsForNode("n1")); n != 0 {
		t.Errorf("the released gang's member is still nominated to n1")
	}
	if n := len(h.NominatedPodsForNode("n2")); n != 1 {
		t.Errorf("the admitted singleton lost its nomination")
	}
}

// TestQueueStatusHead: the Queue status lists the queue's waiting groups in
// admission order (priority, then creation), without the admitted ones, and
// the list follows the queue as groups are admitted and leave.
func TestQueueStatusHead(t *testing.T) {
	ctx := context.Background()
	c, _, qc := newAdmissionCache(t, singletons, mkQueue("a", capability("1")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	podEvent(c, single("ns", "first", inQueue("a"), createdAt(t0)))
	pass(c, t0)
	podEvent(c, single("ns", "old", inQueue("a"), createdAt(t0.Add(time.Second))))
	podEvent(c, single("ns", "urgent", inQueue("a"), priority(100), createdAt(t0.Add(3*time.Second))))
	podEvent(c, single("ns", "young", inQueue("a"), createdAt(t0.Add(2*time.Second))))
	pg := mkPG("ns", "gang", 2, pgQueue("a"))
	addPG(c, pg)
	podEvent(c, memberOf("ns", "gang-0", "gang", inQueue("a")))
	pass(c, t0.Add(4*time.Second))
	writer(c).SyncQueues(ctx)
	head := func() string {
		var names []string
		for _, g := range queueStatus(t, qc, "a").Head {
			names = append(names, g.Kind+":"+g.Name)
		}
		return strings.Join(names, " ")
	}
	// "first" is admitted; the gang short of a member is not in the order.
	if got, want := head(), "Pod:urgent Pod:old Pod:young"; got != want {
		t.Errorf("head %q, want %q", got, want)
	}
	podDelete(c, single("ns", "first", inQueue("a"), createdAt(t0)))
	pass(c, t0.Add(5*time.Second))
	writer(c).SyncQueues(ctx)
	if got, want := head(), "Pod:old Pod:young"; got != want {
		t.Errorf("after urgent was admitted: head %q, want %q", got, want)
	}
}

// TestVerdictNumbersAreDeferred: a waiting pod's verdict is written at
// once when it first appears and when its check changes, but a verdict that
// differs only in its numbers waits VerdictRefresh, and is then written
// with the newest numbers.
func TestVerdictNumbersAreDeferred(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("3")), mkQueue("r", capability("1")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	notice := func(at time.Time) []string {
		c.mu.Lock()
		c.noticePendingLocked(at)
		c.mu.Unlock()
		var out []string
		for _, w := range pendingWrites(c) {
			if w.Pod != nil && w.Pod.Name == "waiting" {
				out = append(out, w.Message)
			}
		}
		return out
	}
	blocker := single("ns", "blocker", inQueue("q"), cpu("2"))
	podEvent(c, blocker)
	pass(c, t0)
	waiting := single("ns", "waiting", inQueue("q"), cpu("2"))
	podEvent(c, waiting)
	pass(c, t0)
	if got := notice(t0); len(got) != 1 || got[0] != "queue q: cpu request 2 exceeds remaining capability 1" {
		t.Fatalf("first verdict written: %q", got)
	}
	// Another pod takes the last core: only the number changes.
	podEvent(c, single("ns", "small", inQueue("q"), cpu("1")))
	pass(c, t0.Add(time.Second))
	if got := notice(t0.Add(time.Second)); len(got) != 0 {
		t.Errorf("a change of numbers only was written at once: %q", got)
	}
	if got := notice(t0.Add(admission.VerdictRefresh - time.Second)); len(got) != 0 {
		t.Errorf("written before verdictRefresh passed: %q", got)
	}
	if got := notice(t0.Add(admission.VerdictRefresh)); len(got) != 1 || got[0] != "queue q: cpu request 2 exceeds remaining capability 0" {
		t.Errorf("after verdictRefresh: %q, want the newest numbers", got)
	}
	// A change of check is written at once: the pod moves to queue r,
	// whose capability it can never fit.
	podEvent(c, next(waiting, inQueue("r")))
	pass(c, t0.Add(admission.VerdictRefresh+time.Second))
	if got := notice(t0.Add(admission.VerdictRefresh + time.Second)); len(got) != 1 || !strings.Contains(got[0], "queue r") {
		t.Errorf("a change of queue: %q, want it written at once", got)
	}
}

// More verdicts than the writer's old buffer (1024) between two pulls are
// all handed out in one pull, each unit once with its last verdict: the
// writer pulls sets, so a slow writer loses nothing and writes no stale
// verdict.
func TestAdmissionWritesAreNeverDropped(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("500")))
	c.ApplyNode(logger, mkNode("n1", "2000"))
	const n = 2000
	var pods []*v1.Pod
	for i := range n {
		p := single("ns", fmt.Sprint("p", i), inQueue("q"), createdAt(t0.Add(time.Duration(i)*time.Millisecond)))
		pods = append(pods, p)
		podEvent(c, p)
	}
	pass(c, t0)
	waiting := 0
	for _, p := range pods {
		if ok, _ := c.Admitted(p); !ok {
			waiting++
		}
	}
	// Those admitted without waiting are told nothing; every refused one
	// is told at the writer's pull.
	refused := map[string]bool{}
	for _, w := range c.AdmissionWrites() {
		if w.Admitted || refused[w.Pod.Name] {
			t.Fatalf("write %+v: want one refusal per pod", w)
		}
		refused[w.Pod.Name] = true
	}
	if len(refused) != waiting || waiting < 1500 {
		t.Errorf("%d refusals written in one pull, want one for each of the %d waiting (at least 1500)", len(refused), waiting)
	}
	// A replica that does not hold the Lease never pulls: what it owes
	// for units that are gone is forgotten with them.
	var late []*v1.Pod
	for i := range 100 {
		p := single("ns", fmt.Sprint("late", i), inQueue("q"), createdAt(t0.Add(time.Hour)))
		late = append(late, p)
		podEvent(c, p)
	}
	pass(c, t0.Add(time.Second))
	owed := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.noticePendingLocked(t0.Add(time.Second))
		return len(c.adm.Writes.Verdicts)
	}
	if n := owed(); n != 100 {
		t.Fatalf("%d verdicts owed for 100 new refused pods", n)
	}
	for _, p := range late {
		podDelete(c, p)
	}
	if n := owed(); n != 0 {
		t.Errorf("%d verdicts still owed after their units went", n)
	}
}
