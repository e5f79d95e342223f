package cache

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/queue"
)

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
