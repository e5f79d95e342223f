package queues_test

import (
	"strings"
	"testing"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

func queueLabels(q string) map[string]string { return map[string]string{qapi.QueueLabel: q} }

// idleRoomAtShare sets up room that no queue within its share can use: two
// nodes of 4 cpu, queues a and b of weight 1 (deserved 4 each once both have
// more demand). a runs 3 cpu and waits with a gang of 2 x 1.5 cpu (3 + 3 > 4:
// refused by its share, and too small for the head exception); b runs 4 cpu.
// The idle cpu can go to b's 1-cpu pods only as a loan. It returns the
// namespace and the deletion counter.
func idleRoomAtShare(t *testing.T, env *harness.Env, opts ...harness.SchedulerOption) (string, func() int) {
	t.Helper()
	ns := env.Namespace(t)
	env.AddNodes(t, 2, "4", "8Gi")
	env.CreateQueue(t, "a", qapi.QueueSpec{Weight: 1})
	env.CreateQueue(t, "b", qapi.QueueSpec{Weight: 1})
	env.StartScheduler(t, opts...)
	evicted := env.CountDeletions(t, ns)

	env.CreatePod(t, harness.Pod(ns, "a-run").CPU("3").Labels(queueLabels("a")).Obj())
	env.CreatePod(t, harness.Pod(ns, "b-run-0").CPU("2").Labels(queueLabels("b")).Obj())
	env.CreatePod(t, harness.Pod(ns, "b-run-1").CPU("2").Labels(queueLabels("b")).Obj())
	env.WaitBound(t, ns, timeout, "a-run", "b-run-0", "b-run-1")

	pg := harness.PodGroup(ns, "a-gang", 2)
	pg.Labels = queueLabels("a")
	env.CreatePodGroup(t, pg)
	env.CreatePods(t, harness.Members(ns, "a-gang", 2, "1500m")...)
	if ev := env.WaitEvent(t, ns, "a-gang", "NotAdmitted", timeout); !strings.Contains(ev.Note, "deserved share") {
		t.Fatalf("a-gang NotAdmitted note %q, want its deserved share named", ev.Note)
	}
	return ns, evicted
}

// TestStrictSharesByDefault: the shipped configuration lends nothing: b at
// its share waits for its own room while a cpu idles, and is told why.
func TestStrictSharesByDefault(t *testing.T) {
	env := harness.Start(t)
	ns, evicted := idleRoomAtShare(t, env)
	env.CreatePod(t, harness.Pod(ns, "b-extra-0").CPU("1").Labels(queueLabels("b")).Obj())
	if ev := env.WaitEvent(t, ns, "b-extra-0", "NotAdmitted", timeout); !strings.Contains(ev.Note, "deserved share") {
		t.Errorf("b-extra-0 NotAdmitted note %q, want its deserved share named", ev.Note)
	}
	env.ConsistentlyUnbound(t, ns, quiet, "b-extra-0", "a-gang-0", "a-gang-1")
	if n := evicted(); n != 0 {
		t.Errorf("%d pods deleted, want none", n)
	}
}

// TestLendIdleRoom: with lendIdleRoom on, room no queue within its share can
// use now is lent to a queue at its share, and reclaim takes the loan back
// when a group within its share needs it.
func TestLendIdleRoom(t *testing.T) {
	env := harness.Start(t)
	ns, evicted := idleRoomAtShare(t, env, harness.WithPluginArgs("CalderaEnqueue", map[string]any{"lendIdleRoom": true}))

	// b at its share: its first 1-cpu pod borrows the idle cpu, the
	// second finds none left.
	env.CreatePod(t, harness.Pod(ns, "b-extra-0").CPU("1").Labels(queueLabels("b")).Obj())
	env.WaitBound(t, ns, timeout, "b-extra-0")
	if ev := env.WaitEvent(t, ns, "b-extra-0", "Admitted", timeout); !strings.Contains(ev.Note, "lent beyond its deserved share") {
		t.Errorf("b-extra-0 Admitted note %q, want it to say the room is lent", ev.Note)
	}
	env.CreatePod(t, harness.Pod(ns, "b-extra-1").CPU("1").Labels(queueLabels("b")).Obj())
	env.ConsistentlyUnbound(t, ns, quiet, "b-extra-1", "a-gang-0", "a-gang-1")
	if n := evicted(); n != 0 {
		t.Fatalf("%d pods deleted before a needs its share", n)
	}

	// a asks for room within its share (3 + 1 <= 4): reclaim takes the
	// loan back, and only the loan (b keeps its deserved 4).
	env.CreatePod(t, harness.Pod(ns, "a-small").CPU("1").Labels(queueLabels("a")).Obj())
	env.WaitBound(t, ns, timeout, "a-small")
	env.WaitPodDeleted(t, ns, "b-extra-0", timeout)
	harness.WaitDeletions(t, evicted, 1)
	if n := evicted(); n != 1 {
		t.Errorf("%d pods deleted, want 1: the loan", n)
	}
	env.ConsistentlyUnbound(t, ns, quiet, "b-extra-1")
	if n := env.BoundPods(t, ns, qapi.QueueLabel+"=b"); n != 2 {
		t.Errorf("b runs %d pods, want its 2 within its share", n)
	}
}
