package cache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/gang"
)

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
