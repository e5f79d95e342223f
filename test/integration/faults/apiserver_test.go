package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestAPIServerRestartWhileGroupsWaitForAdmission restarts the kube-apiserver
// (etcd stays up) while two gangs wait for admission behind a queue's
// capability and two admitted gangs hold it. The scheduler keeps running: its
// clients reconnect to the new apiserver at the same address. Then the
// admitted gangs finish one after the other, and each time a waiting gang must
// be admitted and bound. Sampled through watches from start to end, the
// admitted PodGroups' requests and the bound pods' requests never exceed the
// capability (no over-admission from a scheduler that relisted), and at the
// end the scheduler's cache agrees with a fresh recount.
func TestAPIServerRestartWhileGroupsWaitForAdmission(t *testing.T) {
	began := time.Now()
	env := harness.StartWith(t, harness.WithRestartableAPIServer())
	ns := env.Namespace(t)
	env.AddNodes(t, 2, "4", "8Gi")
	const queueName, capCPU = "restart-cap", 4
	env.CreateQueue(t, queueName, qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: *resource.NewQuantity(capCPU, resource.DecimalSI)}})
	s := env.StartScheduler(t)
	live := s.CalderaCache()
	if live == nil {
		t.Fatal("the scheduler has no Caldera cache")
	}
	logDumpOnFailure(t, live)
	sched := s.Sched

	// Watch admissions and bindings in ns from now to the end.
	smp := startSampler(t, env, ns, capCPU*1000)

	// Four gangs of two 1-cpu members, 2 cpu each (minResources): the
	// queue's capability of 4 cpu admits two of them.
	gang := func(name string) {
		pg := harness.PodGroup(ns, name, 2, harness.PGMinResources("2", ""))
		pg.Labels = map[string]string{qapi.QueueLabel: queueName}
		env.CreatePodGroup(t, pg)
		env.CreatePods(t, harness.Members(ns, name, 2, "1")...)
	}
	gang("g0")
	gang("g1")
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+" in (g0,g1)", 4, timeout)
	gang("g2")
	gang("g3")
	for _, g := range []string{"g2", "g3"} {
		ev := env.WaitEvent(t, ns, g, "NotAdmitted", timeout)
		if !strings.Contains(ev.Note, queueName) {
			t.Fatalf("NotAdmitted note of %s should name queue %s: %q", g, queueName, ev.Note)
		}
	}
	waitAdmittedAnnotations(t, env, ns, "g0", "g1")
	wantAdmitted(t, live, ns, map[string]bool{"g0": true, "g1": true, "g2": false, "g3": false})

	// Stop the apiserver. While it is down nothing can change: requests are
	// refused, and the scheduler (same process) keeps its state.
	downAt := time.Now()
	env.StopAPIServer(t)
	// Nothing can be listed from here until the restart.
	stopped := time.Now()
	if _, err := env.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); err == nil {
		t.Fatal("the apiserver answered while stopped")
	}
	select {
	case <-s.Done():
		t.Fatalf("the scheduler exited while the apiserver was down")
	default:
	}
	wantAdmitted(t, live, ns, map[string]bool{"g0": true, "g1": true, "g2": false, "g3": false})
	env.StartAPIServer(t)
	t.Logf("apiserver down for %v", time.Since(downAt).Round(time.Millisecond))

	// The admitted state survived: in etcd (the annotations) and in the
	// running scheduler.
	waitAdmittedAnnotations(t, env, ns, "g0", "g1")
	wantAdmitted(t, live, ns, map[string]bool{"g0": true, "g1": true, "g2": false, "g3": false})
	// The sampler must see every change from here: wait until it listed
	// again (so it watches the new apiserver).
	smp.waitWatching(t, stopped)

	// g0 finishes: room for one more gang. The PodGroup goes first (its
	// running members stay charged to the queue until they are deleted), so
	// that an admission can only follow the PodGroup's deletion.
	t.Logf("%s: g0 finishes", time.Now().Format(time.StampMilli))
	finish(t, env, ns, "g0")
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+" in (g2,g3)", 2, timeout)
	t.Logf("%s: a waiting gang was admitted and bound; g1 finishes", time.Now().Format(time.StampMilli))
	finish(t, env, ns, "g1")
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+" in (g2,g3)", 4, timeout)
	t.Logf("%s: the other waiting gang was admitted and bound", time.Now().Format(time.StampMilli))
	waitAdmittedAnnotations(t, env, ns, "g2", "g3")

	// Same process, same scheduler, same cache.
	select {
	case <-s.Done():
		t.Fatalf("the scheduler exited: %v", s)
	default:
	}
	if s.Sched != sched || s.CalderaCache() != live {
		t.Fatal("the scheduler or its Caldera cache was replaced")
	}
	smp.check(t, capCPU*1000)
	compareWithRecount(t, s, live)
	t.Logf("took %v", time.Since(began).Round(time.Millisecond))
}

// TestWatchGapRelistConverges cuts the scheduler's connection to the
// apiserver (a proxy between them), changes objects meanwhile through the
// test's own connection — a bound pod deleted, a pending pod relabelled into
// another gang (completing it), a PodGroup deleted under running members,
// another changed, a new gang created, a singleton finished — and compacts
// etcd past those revisions, so that the scheduler's informers cannot resume
// their watches (410 Gone; the apiserver runs without its watch cache, so
// watches are served from etcd) and must relist. Once the connection is back
// the scheduler must act on the relisted objects (the completed and the new
// gang are admitted and bound), and its cache must agree with a fresh recount
// on every history-independent aggregate.
func TestWatchGapRelistConverges(t *testing.T) {
	began := time.Now()
	env := harness.StartWith(t, harness.WithAPIServerFlags("--watch-cache=false"))
	ns := env.Namespace(t)
	const queueName = "gap"
	// Every group of ns, and every pod, is in queue gap: the namespace says so.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := env.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[qapi.QueueLabel] = queueName
		_, err = env.Client.CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	env.AddNodes(t, 2, "4", "8Gi")
	env.CreateQueue(t, queueName, qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("6")}})
	proxy := env.NewProxy(t)
	s := env.StartScheduler(t, harness.WithKubeconfig(proxy.Kubeconfig))
	live := s.CalderaCache()
	if live == nil {
		t.Fatal("the scheduler has no Caldera cache")
	}
	logDumpOnFailure(t, live)

	// Before the gap: gangs a and b bound and running (4 cpu), a singleton
	// bound (5 cpu of 6), gang c (3 cpu) not admitted, gang d waiting for
	// its second member.
	for _, g := range []string{"a", "b"} {
		env.CreatePodGroup(t, harness.PodGroup(ns, g, 2))
		env.CreatePods(t, harness.Members(ns, g, 2, "1")...)
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"="+g, 2, timeout)
		for i := range 2 {
			env.SetPodPhase(t, ns, fmt.Sprintf("%s-%d", g, i), v1.PodRunning)
		}
	}
	env.CreatePod(t, harness.Pod(ns, "solo").CPU("1").Obj())
	env.WaitBound(t, ns, timeout, "solo")
	// c's short timeout bounds the one legitimate detour of the relist (see
	// the restore below).
	env.CreatePodGroup(t, harness.PodGroup(ns, "c", 3, harness.PGTimeout(5)))
	env.CreatePods(t, harness.Members(ns, "c", 3, "1")...)
	env.WaitEvent(t, ns, "c", "NotAdmitted", timeout)
	env.CreatePodGroup(t, harness.PodGroup(ns, "d", 2))
	env.CreatePod(t, harness.Pod(ns, "d-0").CPU("1").Group("d").Obj())
	env.WaitEvent(t, ns, "d", "Waiting", timeout)
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gapStart := pods.ResourceVersion

	// The gap.
	proxy.Sever()
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	pgs := env.PGClient.SchedulingV1alpha1().PodGroups(ns)
	podsClient := env.Client.CoreV1().Pods(ns)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("deleting bound pod a-0", podsClient.Delete(t.Context(), "a-0", now))
	// d-0 is deleted and created again under its name (a controller's
	// replacement): the relist delivers one update with a new UID, which
	// must not leave the old d-0 counted as a second member. (A bound pod
	// recreated unbound is not played: kube-scheduler 1.37's own cache
	// exits the process on that update, "Pod updated on a different node
	// than previously added to".)
	must("deleting pending pod d-0", podsClient.Delete(t.Context(), "d-0", now))
	if _, err := podsClient.Create(t.Context(), harness.Pod(ns, "d-0").CPU("1").Group("d").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("recreating d-0: %v", err)
	}
	must("relabelling c-2 into d", retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := podsClient.Get(t.Context(), "c-2", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Labels[v1alpha1.PodGroupLabel] = "d"
		_, err = podsClient.Update(t.Context(), p, metav1.UpdateOptions{})
		return err
	}))
	must("deleting PodGroup b", pgs.Delete(t.Context(), "b", metav1.DeleteOptions{}))
	must("lowering a's minMember", retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg, err := pgs.Get(t.Context(), "a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pg.Spec.MinMember = 1
		_, err = pgs.Update(t.Context(), pg, metav1.UpdateOptions{})
		return err
	}))
	env.SetPodPhase(t, ns, "solo", v1.PodSucceeded)
	env.CreatePodGroup(t, harness.PodGroup(ns, "e", 1))
	env.CreatePod(t, harness.Pod(ns, "e-0").CPU("1").Group("e").Obj())
	rev := env.CompactEtcd(t)
	t.Logf("gap: changes made, etcd compacted at revision %d (the scheduler last listed at or before %s)", rev, gapStart)

	// A watch resuming where the scheduler's stopped is refused now.
	wantGone(t, env, ns, gapStart)
	// And the scheduler saw none of it.
	unseen := func(g cache.GroupDump) string {
		switch strings.TrimPrefix(g.Key, ns+"/") {
		case "a":
			if g.MinMember != 2 || g.Counts["members"] != 2 {
				return "a's deleted member or lowered minMember"
			}
		case "b":
			if !g.PodGroup {
				return "b's deletion"
			}
		case "d":
			if g.Counts["members"] != 1 {
				return "d's relabelled member"
			}
		case "e":
			return "e's creation"
		}
		return ""
	}
	for _, g := range harness.DumpOf(t, live).Groups {
		if what := unseen(g); what != "" {
			t.Fatalf("the scheduler saw %s while its connection was cut: %+v", what, g)
		}
	}
	select {
	case <-s.Done():
		t.Fatal("the scheduler exited while its connection was cut")
	default:
	}

	// The connection is back: the scheduler relists and acts on what it
	// missed. d is complete now (d-0 and the relabelled c-2), e is new; 3 cpu
	// are in use (a-1, b-0, b-1), so both fit the queue's 6.
	//
	// Each informer relists on its own, so the scheduler may act on a mix of
	// old and new objects in between. If the pod informer has delivered the
	// freed room (a-0, solo) before the member informer delivers c-2's new
	// label, c still looks complete and is admitted; c-0 and c-1 then wait
	// in Permit for a member that left, holding the queue's room until c's
	// timeout (5 s) releases them, and d and e are admitted after that. The
	// outcome is the same either way.
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	env.WaitBound(t, ns, timeout, "d-0", "c-2", "e-0")
	compareWithRecount(t, s, live)
	t.Logf("took %v", time.Since(began).Round(time.Millisecond))
}

// finish deletes a gang as a finished job's cleanup would, PodGroup first,
// then its pods, and waits until they are gone.
func finish(t *testing.T, env *harness.Env, ns, pg string) {
	t.Helper()
	if err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Delete(t.Context(), pg, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting PodGroup %s: %v", pg, err)
	}
	selector := v1alpha1.PodGroupLabel + "=" + pg
	if err := env.Client.CoreV1().Pods(ns).DeleteCollection(t.Context(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: selector}); err != nil {
		t.Fatalf("deleting the members of %s: %v", pg, err)
	}
	harness.WaitFor(t, timeout, func() (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(pods.Items) == 0, err
	}, "the members of "+pg+" to be deleted")
}

// waitAdmittedAnnotations waits until each named PodGroup carries the
// admitted-at annotation.
func waitAdmittedAnnotations(t *testing.T, env *harness.Env, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		harness.WaitFor(t, timeout, func() (bool, error) {
			pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			_, ok := pg.Annotations[qapi.AdmittedAtAnnotation]
			return ok, nil
		}, "PodGroup "+name+" to carry "+qapi.AdmittedAtAnnotation)
	}
}

// wantAdmitted checks the admitted flags of groups in the cache's dump.
func wantAdmitted(t *testing.T, c *cache.Cache, ns string, want map[string]bool) {
	t.Helper()
	got := map[string]bool{}
	for _, g := range harness.DumpOf(t, c).Groups {
		name, ok := strings.CutPrefix(g.Key, ns+"/")
		if _, asked := want[name]; ok && asked {
			got[name] = g.Admitted
		}
	}
	for name, w := range want {
		if a, ok := got[name]; !ok || a != w {
			t.Fatalf("scheduler cache: group %s admitted=%v (present %v), want %v; all: %v", name, a, ok, w, got)
		}
	}
}

// wantGone checks that a watch of pods in ns from resourceVersion rv is
// refused as expired (410 Gone), i.e. that a client resuming there must relist.
func wantGone(t *testing.T, env *harness.Env, ns, rv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		t.Fatalf("watching pods from %s: %v", rv, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type != watch.Error {
			t.Fatalf("a watch of pods from resourceVersion %s after the compaction delivered %s %T, want 410 Gone", rv, ev.Type, ev.Object)
		}
		status, ok := ev.Object.(*metav1.Status)
		if !ok || status.Code != 410 {
			t.Fatalf("a watch of pods from resourceVersion %s failed with %v, want 410 Gone", rv, ev.Object)
		}
		return
	}
	t.Fatalf("a watch of pods from resourceVersion %s ended without an event, want 410 Gone", rv)
}

// logDumpOnFailure logs the cache's dump when the test fails, before the
// environment's cleanups change it.
func logDumpOnFailure(t *testing.T, c *cache.Cache) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if data, err := c.Dump(); err == nil {
			t.Logf("the scheduler's cache when the test failed: %s", data)
		}
	})
}

func render(t *testing.T, v any) string {
	t.Helper()
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// compareWithRecount starts a fresh cache on the current objects (the
// recount) and waits until the running scheduler's cache agrees with it on
// every history-independent aggregate; it fails with both when they do not.
func compareWithRecount(t *testing.T, s *harness.Scheduler, live *cache.Cache) {
	t.Helper()
	fresh := s.RecountCache(t)
	var got, want string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		got, want = render(t, harness.AggregatesOf(harness.DumpOf(t, live))), render(t, harness.AggregatesOf(harness.DumpOf(t, fresh)))
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("the scheduler's cache does not agree with a recount (%v):\n--- scheduler\n%s\n--- recount\n%s", err, got, want)
	}
	t.Logf("the scheduler's cache agrees with a recount:\n%s", got)
}

// sampler follows admissions (PodGroups' admitted-at annotation) and bindings
// in a namespace with list+watch loops of its own, and records at every
// change the total cpu request of the admitted PodGroups present and of the
// bound, unfinished pods. Each loop sees one resource's changes in etcd's
// order, so each total is exact at every revision it observes.
type sampler struct {
	mu         sync.Mutex
	pgs        map[string]int64 // admitted PodGroup -> minResources cpu (millicores)
	pods       map[string]int64 // bound, unfinished pod -> cpu request (millicores)
	maxAdm     int64
	maxBound   int64
	samples    int
	violations []string
	listed     map[string]time.Time // resource -> last successful list
}

func startSampler(t *testing.T, env *harness.Env, ns string, capMilli int64) *sampler {
	s := &sampler{pgs: map[string]int64{}, pods: map[string]int64{}, listed: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	podsClient := env.Client.CoreV1().Pods(ns)
	pgClient := env.PGClient.SchedulingV1alpha1().PodGroups(ns)
	wg.Go(func() {
		s.loop(ctx, "podgroups", capMilli, func(ctx context.Context) (string, map[string]int64, error) {
			list, err := pgClient.List(ctx, metav1.ListOptions{})
			if err != nil {
				return "", nil, err
			}
			m := map[string]int64{}
			for i := range list.Items {
				if name, cpu, ok := admittedPG(&list.Items[i]); ok {
					m[name] = cpu
				}
			}
			return list.ResourceVersion, m, nil
		}, func(ctx context.Context, rv string) (watch.Interface, error) {
			return pgClient.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		}, func(ev watch.Event) (string, int64, bool, bool) {
			pg, ok := ev.Object.(*v1alpha1.PodGroup)
			if !ok {
				return "", 0, false, false
			}
			_, cpu, admitted := admittedPG(pg)
			return pg.Name, cpu, admitted && ev.Type != watch.Deleted, true
		}, &s.pgs, &s.maxAdm, "admitted PodGroups")
	})
	wg.Go(func() {
		s.loop(ctx, "pods", capMilli, func(ctx context.Context) (string, map[string]int64, error) {
			list, err := podsClient.List(ctx, metav1.ListOptions{})
			if err != nil {
				return "", nil, err
			}
			m := map[string]int64{}
			for i := range list.Items {
				if cpu, ok := boundPod(&list.Items[i]); ok {
					m[list.Items[i].Name] = cpu
				}
			}
			return list.ResourceVersion, m, nil
		}, func(ctx context.Context, rv string) (watch.Interface, error) {
			return podsClient.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		}, func(ev watch.Event) (string, int64, bool, bool) {
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				return "", 0, false, false
			}
			cpu, bound := boundPod(p)
			return p.Name, cpu, bound && ev.Type != watch.Deleted, true
		}, &s.pods, &s.maxBound, "bound pods")
	})
	harness.WaitFor(t, timeout, func() (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.listed) == 2, nil
	}, "the sampler's first lists")
	return s
}

func admittedPG(pg *v1alpha1.PodGroup) (string, int64, bool) {
	if _, ok := pg.Annotations[qapi.AdmittedAtAnnotation]; !ok {
		return pg.Name, 0, false
	}
	cpu := pg.Spec.MinResources[v1.ResourceCPU]
	return pg.Name, cpu.MilliValue(), true
}

func boundPod(p *v1.Pod) (int64, bool) {
	if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return 0, false
	}
	var cpu int64
	for _, c := range p.Spec.Containers {
		q := c.Resources.Requests[v1.ResourceCPU]
		cpu += q.MilliValue()
	}
	return cpu, true
}

// loop lists and watches one resource until ctx ends, re-listing at once
// after any watch error (the apiserver restart), and records every state.
func (s *sampler) loop(ctx context.Context, resource string, capMilli int64,
	list func(context.Context) (string, map[string]int64, error),
	watchFrom func(context.Context, string) (watch.Interface, error),
	apply func(watch.Event) (name string, cpu int64, present, ok bool),
	state *map[string]int64, max *int64, what string) {
	for ctx.Err() == nil {
		rv, m, err := list(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		s.mu.Lock()
		*state = m
		s.listed[resource] = time.Now()
		s.recordLocked(*state, capMilli, max, what)
		s.mu.Unlock()
		w, err := watchFrom(ctx, rv)
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			name, cpu, present, ok := apply(ev)
			if !ok {
				continue
			}
			s.mu.Lock()
			if present {
				(*state)[name] = cpu
			} else {
				delete(*state, name)
			}
			s.recordLocked(*state, capMilli, max, what)
			s.mu.Unlock()
		}
		w.Stop()
	}
}

func (s *sampler) recordLocked(state map[string]int64, capMilli int64, max *int64, what string) {
	var sum int64
	for _, v := range state {
		sum += v
	}
	s.samples++
	*max = maxOf(*max, sum)
	if sum > capMilli {
		names := make([]string, 0, len(state))
		for n := range state {
			names = append(names, n)
		}
		slices.Sort(names)
		s.violations = append(s.violations, fmt.Sprintf("%s request %dm cpu > capability %dm: %v", what, sum, capMilli, names))
	}
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// waitWatching waits until both loops listed after since, so that they see
// every later change.
func (s *sampler) waitWatching(t *testing.T, since time.Time) {
	t.Helper()
	harness.WaitFor(t, timeout, func() (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range []string{"pods", "podgroups"} {
			if !s.listed[r].After(since) {
				return false, nil
			}
		}
		return true, nil
	}, "the sampler to list again after the apiserver restart")
}

// check fails the test if any sample exceeded the capability, and makes sure
// the sampler saw the capability filled (so it could have seen more).
func (s *sampler) check(t *testing.T, capMilli int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("sampler: %d samples, at most %dm cpu admitted and %dm bound (capability %dm)", s.samples, s.maxAdm, s.maxBound, capMilli)
	if len(s.violations) > 0 {
		t.Fatalf("over-admission:\n%s", strings.Join(s.violations, "\n"))
	}
	if s.maxAdm != capMilli || s.maxBound != capMilli {
		t.Fatalf("the sampler never saw the capability filled (admitted %dm, bound %dm, capability %dm)", s.maxAdm, s.maxBound, capMilli)
	}
}
