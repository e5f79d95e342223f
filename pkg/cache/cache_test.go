package cache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// t0 is the fixed "now" of the tests; every time-dependent call takes it (or an
// offset of it) explicitly, so no test depends on the wall clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

var logger = klog.Background()

// ---------------------------------------------------------------------------
// Fake framework handle.

// fakeHandle is the slice of fwk.Handle the cache uses. Any other method panics
// on the nil embedded interface, which is what a test wants to hear about.
type fakeHandle struct {
	fwk.Handle

	mu sync.Mutex
	// activated holds one entry per Activate call: the activated pods' keys, sorted.
	activated [][]string
	waiting   map[types.UID]*fakeWaitingPod
	events    []recordedEvent
	// actions holds every recorded Event's action, in order; not cleared
	// by recorded.
	actions []string
	// cs is ClientSet's answer, for the tests that write pods.
	cs kubernetes.Interface
	// nominated is the scheduler's in-memory nominator: node -> pods.
	nominated map[string][]fwk.PodInfo
	// profile is ProfileName's answer; "" means caldera-scheduler.
	profile string
}

func (h *fakeHandle) ProfileName() string {
	if h.profile == "" {
		return "caldera-scheduler"
	}
	return h.profile
}

func (h *fakeHandle) ClientSet() kubernetes.Interface { return h.cs }

func (h *fakeHandle) NominatedPodsForNode(node string) []fwk.PodInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.nominated[node])
}

func (h *fakeHandle) DeleteNominatedPodIfExists(pod *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for n, pis := range h.nominated {
		h.nominated[n] = slices.DeleteFunc(pis, func(pi fwk.PodInfo) bool { return pi.GetPod().UID == pod.UID })
	}
}

// nominateInMemory nominates pod to node in the fake nominator, as
// CalderaReclaim's holdForGang does through the handle.
func (h *fakeHandle) nominateInMemory(tb testing.TB, pod *v1.Pod, node string) {
	tb.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		tb.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.nominated == nil {
		h.nominated = map[string][]fwk.PodInfo{}
	}
	h.nominated[node] = append(h.nominated[node], pi)
}

func newFakeHandle() *fakeHandle {
	return &fakeHandle{waiting: map[types.UID]*fakeWaitingPod{}}
}

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	keys := slices.Sorted(maps.Keys(pods))
	for k, p := range pods {
		if want := p.Namespace + "/" + p.Name; k != want {
			panic(fmt.Sprintf("Activate key %q for pod %q", k, want))
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.activated = append(h.activated, keys)
}

// activations returns the Activate calls so far and forgets them.
func (h *fakeHandle) activations() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.activated
	h.activated = nil
	return out
}

func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if wp, ok := h.waiting[uid]; ok {
		return wp
	}
	return nil // not a typed nil: the cache compares with nil
}

// park records pod as waiting in Permit, as the framework does when Permit
// returns Wait.
func (h *fakeHandle) park(pod *v1.Pod) *fakeWaitingPod {
	wp := &fakeWaitingPod{pod: pod}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting[pod.UID] = wp
	return wp
}

// unpark removes a pod from the waiting set, as the framework does once the
// pod's wait ends.
func (h *fakeHandle) unpark(pod *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiting, pod.UID)
}

type recordedEvent struct {
	kind, name, eventType, reason, message string
}

func (h *fakeHandle) EventRecorder() events.EventRecorderLogger { return fakeRecorder{h} }

func (h *fakeHandle) recorded() []recordedEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.events
	h.events = nil
	return out
}

type fakeRecorder struct{ h *fakeHandle }

func (r fakeRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	var kind, name string
	switch o := regarding.(type) {
	case *v1.ObjectReference:
		kind, name = o.Kind, o.Namespace+"/"+o.Name
	case *v1.Pod:
		kind, name = "Pod", o.Namespace+"/"+o.Name
	default:
		kind = fmt.Sprintf("%T", regarding)
	}
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.events = append(r.h.events, recordedEvent{kind, name, eventtype, reason, fmt.Sprintf(note, args...)})
	r.h.actions = append(r.h.actions, action)
}

func (r fakeRecorder) AnnotatedEventf(regarding, related runtime.Object, _ map[string]string, eventtype, reason, action, note string, args ...any) {
	r.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (r fakeRecorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

// fakeWaitingPod records what the cache asks of a pod parked in Permit.
type fakeWaitingPod struct {
	pod *v1.Pod

	mu       sync.Mutex
	allowed  []string // plugin names
	rejected []string // "plugin: message"
}

func (w *fakeWaitingPod) GetPod() *v1.Pod             { return w.pod }
func (w *fakeWaitingPod) GetPendingPlugins() []string { return nil }
func (w *fakeWaitingPod) Allow(plugin string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.allowed = append(w.allowed, plugin)
}
func (w *fakeWaitingPod) Reject(plugin, msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rejected = append(w.rejected, plugin+": "+msg)
	return true
}
func (w *fakeWaitingPod) Preempt(string, string) bool { panic("the cache never preempts") }

func (w *fakeWaitingPod) calls() (allowed, rejected []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.allowed), slices.Clone(w.rejected)
}

// ---------------------------------------------------------------------------
// Cache and objects.

// newTestCache builds a Cache the way newCache does, minus the informers and
// clients: events are delivered by calling the handlers directly.
func newTestCache(tb testing.TB) (*Cache, *fakeHandle) {
	c, h := newUnlistedCache(tb)
	c.membersSynced.fire() // as if the scheduler's pod informer had listed
	return c, h
}

// newUnlistedCache is newTestCache before the scheduler's pod informer has
// listed the gang members, as a restart finds it.
func newUnlistedCache(tb testing.TB) (*Cache, *fakeHandle) {
	h := newFakeHandle()
	c := newEmpty(context.Background(), h)
	c.queueSeen.Store(true) // as if the scheduling queue were running
	tb.Cleanup(func() {
		// Backoff timers use the wall clock; the tests never wait for them.
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, g := range c.groups {
			if g.BackoffTimer != nil {
				g.BackoffTimer.Stop()
			}
		}
	})
	return c, h
}

type podOpt func(*v1.Pod)

func mkPod(ns, name, group string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID("uid-" + ns + "-" + name),
			CreationTimestamp: metav1.NewTime(t0),
		},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse("1"),
				v1.ResourceMemory: resource.MustParse("1Gi"),
			}},
		}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	if group != "" {
		p.Labels = map[string]string{gangbook.PodGroupLabel: group}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// next returns the object an informer would deliver after p changed by opts.
func next(p *v1.Pod, opts ...podOpt) *v1.Pod {
	p = p.DeepCopy()
	for _, o := range opts {
		o(p)
	}
	return p
}

func cpu(q string) podOpt {
	return func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(q) }
}
func boundTo(node string) podOpt  { return func(p *v1.Pod) { p.Spec.NodeName = node } }
func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func priority(v int32) podOpt     { return func(p *v1.Pod) { p.Spec.Priority = &v } }
func createdAt(t time.Time) podOpt {
	return func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}
func label(group string) podOpt { return func(p *v1.Pod) { setLabel(p, group) } }
func setLabel(p *v1.Pod, group string) {
	if group == "" {
		delete(p.Labels, gangbook.PodGroupLabel)
		return
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[gangbook.PodGroupLabel] = group
}

type pgOpt func(*v1alpha1.PodGroup)

func mkPG(ns, name string, minMember int32, opts ...pgOpt) *v1alpha1.PodGroup {
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID("pg-" + ns + "-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		},
		Spec: v1alpha1.PodGroupSpec{MinMember: minMember},
	}
	for _, o := range opts {
		o(pg)
	}
	return pg
}

func minResources(rl v1.ResourceList) pgOpt {
	return func(pg *v1alpha1.PodGroup) { pg.Spec.MinResources = rl }
}
func scheduleTimeout(s int32) pgOpt {
	return func(pg *v1alpha1.PodGroup) { pg.Spec.ScheduleTimeoutSeconds = &s }
}
func pgCreatedAt(t time.Time) pgOpt {
	return func(pg *v1alpha1.PodGroup) { pg.CreationTimestamp = metav1.NewTime(t) }
}

func mkNode(name, cpuQ string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(cpuQ),
			v1.ResourceMemory: resource.MustParse("64Gi"),
		}},
	}
}

func key(ns, name string) gangbook.GroupKey { return gangbook.GroupKey{Namespace: ns, Name: name} }

// Event shorthands, with the informer's signatures.
func add(c *Cache, p *v1.Pod)               { update(c, nil, p) }
func addPG(c *Cache, pg *v1alpha1.PodGroup) { c.onPodGroup(logger, pg) }
func delPG(c *Cache, pg *v1alpha1.PodGroup) { c.onPodGroupDelete(logger, pg) }
func tombstone(obj runtime.Object) any      { return cache.DeletedFinalStateUnknown{Key: "k", Obj: obj} }

// update delivers p as the informer that holds it would: an unfinished pod
// from the scheduler's, a finished one from the finished-member informer.
// A pod that just finished is delivered there first, then leaves the
// scheduler's informer (the other order is TestFinishedMemberInEitherOrder's).
func update(c *Cache, old, p *v1.Pod) {
	if !phaseOf(p).Terminal() {
		c.onUnfinishedPod(logger, p)
		return
	}
	c.ApplyFinishedPod(logger, nil, p)
	if old != nil && !phaseOf(old).Terminal() {
		c.onUnfinishedPodDelete(logger, old)
	}
}

// del delivers p's deletion from the informer that holds it.
func del(c *Cache, p *v1.Pod) { delObj(c, p, p) }

// delTombstone delivers p's deletion as a tombstone, as after a watch gap.
func delTombstone(c *Cache, p *v1.Pod) { delObj(c, p, tombstone(p)) }

func delObj(c *Cache, p *v1.Pod, obj any) {
	if phaseOf(p).Terminal() {
		c.DeleteFinishedPod(logger, asPod(obj))
	} else {
		c.onUnfinishedPodDelete(logger, obj)
	}
}
func addAll(c *Cache, pods ...*v1.Pod) {
	for _, p := range pods {
		add(c, p)
	}
}
func names(pods ...*v1.Pod) (out []string) {
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}
func counts(c *Cache, k gangbook.GroupKey) *gang.Counts {
	return lockedGroup(c, k, func(g *gangbook.Group) gang.Counts { return g.Counts })
}
func priorityOf(c *Cache, k gangbook.GroupKey) *int32 {
	return lockedGroup(c, k, func(g *gangbook.Group) int32 { return g.Priority })
}
func lockedGroup[T any](c *Cache, k gangbook.GroupKey, f func(*gangbook.Group) T) *T {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.groups[k]
	if g == nil {
		return nil
	}
	v := f(g)
	return &v
}

func wantCounts(t *testing.T, c *Cache, k gangbook.GroupKey, want *gang.Counts) {
	t.Helper()
	got := counts(c, k)
	switch {
	case want == nil && got != nil:
		t.Errorf("group %s: still cached with counts %+v, want it dropped", k, *got)
	case want != nil && got == nil:
		t.Errorf("group %s: not cached, want counts %+v", k, *want)
	case want != nil && *got != *want:
		t.Errorf("group %s: counts\n got %+v\nwant %+v", k, *got, *want)
	}
}

func wantActivations(t *testing.T, h *fakeHandle, want ...[]string) {
	t.Helper()
	got := h.activations()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	for _, w := range want {
		sort.Strings(w)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Activate calls:\n got %q\nwant %q", got, want)
	}
}

// ---------------------------------------------------------------------------
// Event handlers and aggregates.
