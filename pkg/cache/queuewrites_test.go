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
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	qfake "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned/fake"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

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
