package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/pkg/status"
)

// overruns is the reservations fixture's configuration with overrun
// evictions on, as CalderaEnqueue's defaults have them.
var overruns = admission.Options{AdmitSingletons: true, StarvationThreshold: -1, EvictOverruns: true}

// The fixture's reservation: train, two 4-cpu members, from t0+100 (when
// run0 ends by its limit) on n0 and n2.
var trainFrom = t0.Add(100 * time.Second).UTC().Format(time.RFC3339)

// overranInto is the message of an overrun eviction into train's
// reservation.
func overranInto(overrun, limit int, source string) string {
	return fmt.Sprintf("ran %ds past its run-time limit of %ds (%s %s) into the reservation of pg:ns/train from %s",
		overrun, limit, source, runlimit.Annotation, trainFrom)
}

func deadline(seconds int64) podOpt {
	return func(p *v1.Pod) {
		p.Spec.ActiveDeadlineSeconds = &seconds
		noGrace(p)
	}
}

// noGrace: a deadline holds the room for no grace period beyond it.
func noGrace(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0) }

func notOurs(p *v1.Pod) { p.Spec.SchedulerName = "default-scheduler" }

func terminating(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0.Add(125 * time.Second)} }

// TestOverrunEvictions: when a reservation's start has come and its gang
// is still not admitted, the pods on its nodes past a run-time limit they
// declared by annotation (on the pod or its PodGroup) are evicted, as few
// as free the room it needs there, longest overdue first; deadlines are
// the kubelet's, and nothing is evicted unless every node of the
// reservation then has its room.
func TestOverrunEvictions(t *testing.T) {
	type event struct{ kind, name, eventType, message string }
	for _, tc := range []struct {
		name string
		opts admission.Options
		// setup runs after the fixture's first pass at t0+10, which
		// reserves n0 and n2 for train from t0+100; it returns the pods
		// the API server holds besides the fixture's.
		setup func(t *testing.T, c *Cache) []*v1.Pod
		// run0Ends: run0 (n0, 100 s by annotation) has ended by t0+100.
		run0Ends bool
		evicted  []string // namespace/name, in the order evicted
		events   []event
	}{{
		name: "a backfilled job past its pod annotation",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			backfillShort(t, c) // 60 s, admitted at t0+10 into train's room
			short := single("ns", "short", cpu("4"), limit(60), createdAt(t0.Add(time.Second)), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, short)
			return []*v1.Pod{short}
		},
		run0Ends: true,
		evicted:  []string{"ns/short"},
		events: []event{
			{"Pod", "ns/short", v1.EventTypeWarning, overranInto(60, 60, "pod annotation")},
			{"PodGroup", "ns/train", v1.EventTypeNormal, "ns/short: " + overranInto(60, 60, "pod annotation")},
		},
	}, {
		name: "a gang member past its PodGroup's annotation",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			addPG(c, mkPG("ns", "quick", 1, func(pg *v1alpha1.PodGroup) {
				pg.Annotations = map[string]string{runlimit.Annotation: "60"}
			}))
			p := memberOf("ns", "quick-0", "quick", cpu("4"), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, p)
			return []*v1.Pod{p}
		},
		run0Ends: true,
		evicted:  []string{"ns/quick-0"},
		events: []event{
			{"Pod", "ns/quick-0", v1.EventTypeWarning, overranInto(60, 60, "PodGroup annotation")},
			{"PodGroup", "ns/quick", v1.EventTypeWarning, "ns/quick-0: " + overranInto(60, 60, "PodGroup annotation")},
			{"PodGroup", "ns/train", v1.EventTypeNormal, "ns/quick-0: " + overranInto(60, 60, "PodGroup annotation")},
		},
	}, {
		name: "both reserved nodes held by pods past their annotations: both go",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			p := single("ns", "short", cpu("4"), limit(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, p)
			return []*v1.Pod{p, fixtureRun0()}
		},
		evicted: []string{"ns/short", "ns/run0"}, // longest overdue first: 60 s, then 30 s
		events: []event{
			{"Pod", "ns/short", v1.EventTypeWarning, overranInto(60, 60, "pod annotation")},
			{"PodGroup", "ns/train", v1.EventTypeNormal, "ns/short: " + overranInto(60, 60, "pod annotation")},
			{"Pod", "ns/run0", v1.EventTypeWarning, overranInto(30, 100, "pod annotation")},
			{"PodGroup", "ns/train", v1.EventTypeNormal, "ns/run0: " + overranInto(30, 100, "pod annotation")},
		},
	}, {
		name: "past its activeDeadlineSeconds: the kubelet's to stop",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			p := single("ns", "short", cpu("4"), deadline(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, p)
			return []*v1.Pod{p}
		},
		run0Ends: true,
	}, {
		name: "past its Job's deadline, shorter than its annotation: the Job controller's to stop",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			c.ApplyJob(mkJob("work", ptr.To[int64](50)))
			p := single("ns", "short", cpu("4"), limit(60), ownedBy("Job", "work"), noGrace, boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, p)
			return []*v1.Pod{p}
		},
		run0Ends: true,
	}, {
		name: "a deadline past on the other node: it is leaving, the annotation's pod goes",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			podEvent(c, next(fixtureRun0(), func(p *v1.Pod) { p.Annotations = nil }, deadline(100)))
			p := single("ns", "short", cpu("4"), limit(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, p)
			return []*v1.Pod{p}
		},
		evicted: []string{"ns/short"},
		events: []event{
			{"Pod", "ns/short", v1.EventTypeWarning, overranInto(60, 60, "pod annotation")},
			{"PodGroup", "ns/train", v1.EventTypeNormal, "ns/short: " + overranInto(60, 60, "pod annotation")},
		},
	}, {
		name: "another node's room is held by another scheduler's pod: nothing is evicted",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			podEvent(c, next(fixtureRun0(), notOurs))
			p := single("ns", "short", cpu("4"), limit(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, p)
			return []*v1.Pod{p}
		},
	}, {
		name: "another scheduler's pod past its annotation is not Caldera's to evict",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			p := single("ns", "short", cpu("4"), limit(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)), notOurs)
			podEvent(c, p)
			return []*v1.Pod{p}
		},
		run0Ends: true,
	}, {
		name: "a pod already terminating is leaving",
		opts: overruns,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			p := single("ns", "short", cpu("4"), limit(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)), terminating)
			podEvent(c, p)
			return []*v1.Pod{p}
		},
		run0Ends: true,
	}, {
		name: "evictOverruns off",
		opts: singletons,
		setup: func(t *testing.T, c *Cache) []*v1.Pod {
			p := single("ns", "short", cpu("4"), limit(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
			podEvent(c, p)
			return []*v1.Pod{p}
		},
		run0Ends: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, train, h := reservationsFixture(t, tc.opts)
			evictionPass(c, h, t0.Add(10*time.Second))
			if res, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", "train")); !ok || res.Start != t0.Unix()+100 {
				t.Fatalf("train's reservation %+v, want one from t0+100", res)
			}
			cs := fake.NewSimpleClientset(podObjects(append(tc.setup(t, c), fixtureRun0()))...)
			h.cs = cs
			h.recorded()

			// Before the reservation's start nothing goes, though the
			// pods are past their limits already.
			evictionPass(c, h, t0.Add(80*time.Second))
			if got := deletedPods(cs); len(got) != 0 {
				t.Fatalf("evicted %v at t0+80, before train's reservation starts", got)
			}
			if tc.run0Ends {
				podDelete(c, fixtureRun0())
			}
			evictionPass(c, h, t0.Add(130*time.Second))
			if got := deletedPods(cs); !slices.Equal(got, tc.evicted) {
				t.Errorf("evicted %v at t0+130, want %v", got, tc.evicted)
			}
			var got []event
			for _, e := range h.recorded() {
				if e.reason == admission.ReasonOverranRunLimit {
					got = append(got, event{e.kind, e.name, e.eventType, e.message})
				}
			}
			if !slices.Equal(got, tc.events) {
				t.Errorf("Events:\n got %q\nwant %q", got, tc.events)
			}
			for _, name := range tc.evicted {
				if cond := disruptionTarget(t, cs, name); cond == nil || cond.Reason != v1.PodReasonPreemptionByScheduler ||
					!strings.Contains(cond.Message, "past its run-time limit") {
					t.Errorf("%s: DisruptionTarget condition %+v, want the scheduler's, naming the overrun", name, cond)
				}
			}
			if len(tc.evicted) == 0 {
				if ok, msg := c.Admitted(train[0]); ok {
					t.Errorf("train admitted (%q) though nothing was evicted", msg)
				}
				return
			}
			// In flight until it leaves: the next pass evicts no more.
			evictionPass(c, h, t0.Add(131*time.Second))
			if got := deletedPods(cs); len(got) != len(tc.evicted) {
				t.Errorf("evicted %v by t0+131, want only %v: the first evictions are in flight", got, tc.evicted)
			}
			// Once the victims are gone (and run0, had the kubelet still
			// to stop it) the gang starts.
			for _, p := range podsNamed(tc.evicted) {
				podDelete(c, p)
			}
			podDelete(c, fixtureRun0())
			evictionPass(c, h, t0.Add(132*time.Second))
			wantAdmitted(t, c, verdict{true, ""}, train...)
		})
	}
}

// Longest overdue first, and no more than the reservation needs: a 2-cpu
// member reserved on a node two pods past their limits hold takes the
// room of the one longer past its limit.
func TestOverrunEvictsLongestOverdueOnly(t *testing.T) {
	c, h, _ := newAdmissionCache(t, overruns, mkQueue("default"))
	c.ApplyNode(logger, mkNode("n0", "4"))
	a := single("ns", "a", cpu("2"), limit(20), boundTo("n0"), runningSince(t0))
	b := single("ns", "b", cpu("2"), limit(40), boundTo("n0"), runningSince(t0))
	podEvent(c, a)
	podEvent(c, b)
	addPG(c, mkPG("ns", "g", 1))
	g := memberOf("ns", "g-0", "g", cpu("2"))
	podEvent(c, g)
	cs := fake.NewSimpleClientset(a, b)
	h.cs = cs
	evictionPass(c, h, t0.Add(10*time.Second))
	if res, ok := c.feasible.ReservationOf(queue.GroupUnit("ns", "g")); !ok || res.Start != t0.Unix()+20 {
		t.Fatalf("g's reservation %+v, want one from t0+20", res)
	}
	evictionPass(c, h, t0.Add(60*time.Second)) // a is 40 s past its limit, b 20 s
	if got := deletedPods(cs); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("evicted %v, want [ns/a]: the longest overdue, and enough", got)
	}
}

// A failed eviction is forgotten: the next pass tries again. Only the
// replica that schedules evicts.
func TestOverrunEvictionRetriesAndLeadership(t *testing.T) {
	c, _, h := reservationsFixture(t, overruns)
	evictionPass(c, h, t0.Add(10*time.Second))
	short := single("ns", "short", cpu("4"), limit(60), boundTo("n2"), runningSince(t0.Add(10*time.Second)))
	podEvent(c, short)
	podDelete(c, fixtureRun0())
	cs := fake.NewSimpleClientset(short)
	fail := true
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("the API server is away")
		}
		return false, nil, nil
	})
	h.cs = cs

	lead := status.NewLeadership()
	lead.Follow(&leaderelection.LeaderElectionConfig{Lock: meLock{}, RenewDeadline: time.Hour})
	c.lead = lead
	evictionPass(c, h, t0.Add(130*time.Second))
	if n := len(deleteActions(cs)); n != 0 {
		t.Fatalf("a standby made %d delete calls", n)
	}
	c.lead = nil // no leader election: it schedules

	evictionPass(c, h, t0.Add(131*time.Second))
	if n := len(deleteActions(cs)); n != 1 {
		t.Fatalf("%d delete calls, want 1", n)
	}
	if got := c.Evictions().InFlight([]*v1.Pod{short}); got[short.UID] {
		t.Error("a failed eviction is still in flight")
	}
	fail = false
	evictionPass(c, h, t0.Add(132*time.Second))
	if got := deletedPods(cs); !slices.Equal(got, []string{"ns/short"}) {
		t.Errorf("after a failed eviction the next pass evicted %v, want [ns/short]", got)
	}
	if got := c.Evictions().InFlight([]*v1.Pod{short}); !got[short.UID] {
		t.Error("a made eviction is not in flight until the pod leaves")
	}
	// The passes since t0+100 moved the reservation's start to now+1
	// (short is overdue): the message names the start it was given first.
	var msgs []string
	for _, e := range h.recorded() {
		if e.reason == admission.ReasonOverranRunLimit && e.kind == "Pod" {
			msgs = append(msgs, e.message)
		}
	}
	if want := overranInto(62, 60, "pod annotation"); len(msgs) != 1 || msgs[0] != want {
		t.Errorf("Events on short: %q, want [%q]", msgs, want)
	}
}

// fixtureRun0 is reservationsFixture's run0 as the informer delivered it.
func fixtureRun0() *v1.Pod {
	return single("ns", "run0", cpu("4"), boundTo("n0"), limit(100), runningSince(t0))
}

func podObjects(pods []*v1.Pod) []runtime.Object {
	seen := map[string]bool{}
	var out []runtime.Object
	for _, p := range pods {
		if k := p.Namespace + "/" + p.Name; !seen[k] {
			seen[k] = true
			out = append(out, p.DeepCopy())
		}
	}
	return out
}

func deleteActions(cs *fake.Clientset) []k8stesting.DeleteAction {
	var out []k8stesting.DeleteAction
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, d)
		}
	}
	return out
}

// deletedPods are the pods deleted through cs, in order, once each.
func deletedPods(cs *fake.Clientset) []string {
	var out []string
	for _, d := range deleteActions(cs) {
		if k := d.GetNamespace() + "/" + d.GetName(); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// disruptionTarget is the DisruptionTarget condition the eviction patched
// into pod namespace/name before deleting it (the fake keeps no deleted
// object, so the patch is read back from the actions).
func disruptionTarget(t *testing.T, cs *fake.Clientset, name string) *v1.PodCondition {
	t.Helper()
	for _, a := range cs.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || a.GetSubresource() != "status" || p.GetNamespace()+"/"+p.GetName() != name {
			continue
		}
		var pod v1.Pod
		if err := json.Unmarshal(p.GetPatch(), &pod); err != nil {
			t.Fatalf("decoding the status patch of %s: %v", name, err)
		}
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == v1.DisruptionTarget {
				return &pod.Status.Conditions[i]
			}
		}
	}
	return nil
}

// podsNamed are pods of the given names (and the fixtures' UIDs), for
// their deletion.
func podsNamed(names []string) []*v1.Pod {
	var out []*v1.Pod
	for _, n := range names {
		ns, name, _ := strings.Cut(n, "/")
		out = append(out, single(ns, name, cpu("4")))
	}
	return out
}

// The per-node index of the pods with a limit is kept from pass to pass
// by the marks the release timeline takes of changed ends, and dropped
// when the timeline is rebuilt (a node came): after each event it is what
// indexing every end afresh gives.
func TestOverrunIndexFollowsEnds(t *testing.T) {
	c, _, _ := reservationsFixture(t, overruns)
	pass(c, t0.Add(10*time.Second))
	o := &c.evictions.Overrun
	check := func(step string) {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		o.Follow(&c.feasible.Releases, c.adm.Ends) // as the next pass starts
		if o.ByNode == nil {
			o.Build(&c.feasible.Releases, c.adm.Ends)
		}
		want := map[string][]string{}
		for uid, e := range c.adm.Ends {
			want[e.Node] = append(want[e.Node], string(uid))
		}
		got := map[string][]string{}
		for n, set := range o.ByNode {
			for uid := range set {
				got[n] = append(got[n], string(uid))
			}
		}
		for _, m := range []map[string][]string{want, got} {
			for n := range m {
				slices.Sort(m[n])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: index %v, want %v", step, got, want)
		}
	}
	check("built")
	at := t0.Add(10 * time.Second)
	for _, step := range []struct {
		name  string
		event func()
	}{
		{"a pod with a limit bound", func() {
			podEvent(c, single("ns", "x", cpu("1"), limit(50), boundTo("n2"), runningSince(t0)))
		}},
		{"a pod without one bound", func() { podEvent(c, single("ns", "y", cpu("1"), boundTo("n2"), runningSince(t0))) }},
		{"a limit lengthened", func() {
			podEvent(c, single("ns", "run1", cpu("4"), boundTo("n1"), limit(400), runningSince(t0)))
		}},
		{"a limit taken away", func() { podEvent(c, single("ns", "x", cpu("1"), boundTo("n2"), runningSince(t0))) }},
		{"a limit given", func() { podEvent(c, single("ns", "y", cpu("1"), limit(30), boundTo("n2"), runningSince(t0))) }},
		{"a pod gone", func() { podDelete(c, fixtureRun0()) }},
		{"a node came", func() {
			c.ApplyNode(logger, mkNode("n3", "1"))
			podEvent(c, single("ns", "z", cpu("1"), limit(70), boundTo("n3"), runningSince(t0)))
		}},
	} {
		step.event()
		at = at.Add(time.Second)
		pass(c, at)
		check(step.name)
	}
}

// evictionPass is an admission pass at now followed by what the status
// writer does with the evictions it chose (status.EvictOverruns), through
// h's clientset.
func evictionPass(c *Cache, h *fakeHandle, now time.Time) {
	pass(c, now)
	status.EvictOverruns(context.Background(), h.cs, c)
}

// A pod that ends at its limit is seen finishing a moment later (the
// kubelet's status report, the informer): within OverrunGrace past its
// limit it is not evicted as an overrun, after it it is. run0 (100 s from
// t0) holds n0 at train's start, t0+100.
func TestOverrunGrace(t *testing.T) {
	c, _, h := reservationsFixture(t, overruns)
	evictionPass(c, h, t0.Add(10*time.Second))
	cs := fake.NewSimpleClientset(podObjects([]*v1.Pod{fixtureRun0()})...)
	h.cs = cs
	at := t0.Add(100*time.Second + admission.OverrunGrace - time.Second)
	evictionPass(c, h, at)
	if got := deletedPods(cs); len(got) != 0 {
		t.Fatalf("evicted %v %v past run0's limit, within the grace", got, at.Sub(t0.Add(100*time.Second)))
	}
	evictionPass(c, h, t0.Add(100*time.Second+admission.OverrunGrace))
	if got := deletedPods(cs); !slices.Equal(got, []string{"ns/run0"}) {
		t.Errorf("evicted %v at the grace's end, want [ns/run0]", got)
	}
}
