package cache

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// estimateFixture: three 4-cpu nodes; n0 and n1 run a 4-cpu pod without a
// limit since t0, n2 is empty. Gang train (two 4-cpu members) fits only
// once n0 or n1 is empty, which no declared limit says when.
func estimateFixture(t *testing.T) (*Cache, []*v1.Pod) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	for i := range 3 {
		c.ApplyNode(logger, mkNode(fmt.Sprint("n", i), "4"))
	}
	podEvent(c, single("ns", "run0", cpu("4"), boundTo("n0"), runningSince(t0)))
	podEvent(c, single("ns", "run1", cpu("4"), boundTo("n1"), runningSince(t0)))
	return c, addTrain(c)
}

// dumpedGroup is group key as the cache's dump shows it.
func dumpedGroup(t *testing.T, c *Cache, key string) GroupDump {
	t.Helper()
	for _, g := range c.snapshot(time.Now()).Groups {
		if g.Key == key {
			return g
		}
	}
	t.Fatalf("group %s not in the dump", key)
	return GroupDump{}
}

// trainWrite is train's admission write, after the period's notices.
func trainWrite(t *testing.T, c *Cache, at time.Time) (expected, estimated *time.Time) {
	t.Helper()
	c.mu.Lock()
	c.noticePendingLocked(at)
	c.mu.Unlock()
	for _, w := range c.AdmissionWrites() {
		if w.PodGroup != nil && w.PodGroup.Name == "train" {
			return w.ExpectedStart, w.EstimatedStart
		}
	}
	t.Fatalf("no admission write for train")
	return nil, nil
}

// learn has n pods of queue default run about secs seconds and finish.
func learn(c *Cache, n, secs int) {
	started := time.Now().Add(-time.Duration(secs) * time.Second)
	for i := range n {
		p := single("ns", fmt.Sprint("done", i), cpu("0"), boundTo("n2"), runningSince(started))
		podEvent(c, p)
		podEvent(c, next(p, phase(v1.PodSucceeded)))
	}
}

// A head that waits only for pods without a limit gets no reservation.
// Once the queue has learned how long its pods run (five finished in
// about 30 s; a pod that never started teaches nothing), the next plan,
// estimateEvery after the last, gives it an estimated start: about 30 s
// after the pods it waits for started. It is written with the verdict
// (whose message does not change) and shown in what-if's view. It holds
// no room: an unbounded job may take the empty node the estimate placed
// the gang on, which a reservation would have refused.
func TestEstimatedStartBehindUnlimited(t *testing.T) {
	c, train := estimateFixture(t)
	key := queue.GroupUnit("ns", "train")
	pass(c, t0.Add(10*time.Second))
	if _, ok := c.feasible.ReservationOf(key); ok {
		t.Fatalf("train holds a reservation, though nothing it waits for declares a limit")
	}
	if s, ok := c.adm.EstimatedStartOf(key); ok {
		t.Errorf("estimated start %v before anything was learned, want none", s)
	}
	_, msg := c.Admitted(train[0])
	learn(c, 5, 30)
	never := single("ns", "never", cpu("0"), boundTo("n2"))
	podEvent(c, never)
	podEvent(c, next(never, phase(v1.PodFailed)))
	if n := c.adm.Est.Learned().Samples("default"); n != 5 {
		t.Fatalf("queue default learned %d run times, want 5", n)
	}
	pass(c, t0.Add(15*time.Second)) // within estimateEvery: the last plan stands
	if s, ok := c.adm.EstimatedStartOf(key); ok {
		t.Errorf("estimated start %v 5 s after the last plan, want the last plan's (none)", s)
	}
	pass(c, t0.Add(20*time.Second))
	s, ok := c.adm.EstimatedStartOf(key)
	if got := s.Sub(t0); !ok || got < 30*time.Second || got > 32*time.Second {
		t.Fatalf("estimated start t0+%v (%v) once run times of 30 s are learned, want about t0+30s", got, ok)
	}
	if _, now := c.Admitted(train[0]); now != msg {
		t.Errorf("train's verdict changed with the estimate: %q, was %q", now, msg)
	}
	expected, estimated := trainWrite(t, c, t0.Add(20*time.Second))
	if expected != nil || estimated == nil || !estimated.Equal(s) {
		t.Errorf("train's write: expected start %v, estimated %v; want none and %v", expected, estimated, s)
	}
	if v, _ := c.AdmissionOf(train[0]); v.EstimatedStart == nil || !v.EstimatedStart.Equal(s) || v.ExpectedStart != nil {
		t.Errorf("what-if's view of train: expected %v, estimated %v; want none and %v", v.ExpectedStart, v.EstimatedStart, s)
	}
	if g := dumpedGroup(t, c, "ns/train"); g.EstimatedStart == nil || !g.EstimatedStart.Equal(s) || g.ExpectedStart != nil {
		t.Errorf("the dump's train: expected %v, estimated %v; want none and %v", g.ExpectedStart, g.EstimatedStart, s)
	}

	endless := single("ns", "endless", cpu("4"), createdAt(t0.Add(21*time.Second)))
	podEvent(c, endless)
	pass(c, t0.Add(22*time.Second))
	if ok, msg := c.Admitted(endless); !ok {
		t.Errorf("endless: Admitted = false %q, want admitted: an estimate holds no room", msg)
	}
}

// The estimated room follows the pods without a limit, and once they are
// gone it leaves nothing behind.
func TestEstimatedRoomFollowsPods(t *testing.T) {
	c, _ := estimateFixture(t)
	room := func(node, q string) int64 {
		r := c.adm.Est.Room[admission.EstKey{Node: node, Queue: q}]
		if r == nil {
			return 0
		}
		return r.Req["cpu"]
	}
	if got := room("n0", "default"); got != 4000 {
		t.Fatalf("n0's estimated room of queue default: %d mcpu, want 4000", got)
	}
	limited := single("ns", "limited", cpu("1"), boundTo("n2"), limit(60), runningSince(t0))
	podEvent(c, limited)
	if got := room("n2", "default"); got != 0 {
		t.Errorf("a pod with a limit counted in the estimated room (%d mcpu): its end is declared", got)
	}
	podDelete(c, single("ns", "run0", cpu("4"), boundTo("n0"), runningSince(t0)))
	podDelete(c, single("ns", "run1", cpu("4"), boundTo("n1"), runningSince(t0)))
	podDelete(c, limited)
	if len(c.adm.Est.Room) != 0 {
		t.Errorf("estimated room left after every pod went: %+v", c.adm.Est.Room)
	}
}

// A pod moved to another queue moves its room there, as started when the
// latest of its old queue's pods on the node did.
func TestEstimatedRoomRequeue(t *testing.T) {
	var e admission.Estimates
	a := &admission.PodAcct{Node: "n", Queue: "a", Req: resources.List{"cpu": 2}}
	b := &admission.PodAcct{Node: "n", Queue: "a", Req: resources.List{"cpu": 3}}
	e.Bind(a, 100)
	e.Bind(b, 200)
	e.Requeue(a, "b")
	a.Queue = "b" // as retagLocked does after
	if r := e.Room[admission.EstKey{Node: "n", Queue: "a"}]; r == nil || r.Req["cpu"] != 3 || r.N != 1 {
		t.Errorf("queue a's room %+v, want b's 3 cpu alone", r)
	}
	if r := e.Room[admission.EstKey{Node: "n", Queue: "b"}]; r == nil || r.Req["cpu"] != 2 || r.Latest != 200 || r.N != 1 {
		t.Errorf("queue b's room %+v, want 2 cpu from 200", r)
	}
	e.Unbind(a)
	e.Unbind(b)
	e.Unbind(b) // counted once
	if len(e.Room) != 0 {
		t.Errorf("rooms left: %+v", e.Room)
	}
}

func TestSteady(t *testing.T) {
	const now = 1000
	for _, tc := range []struct {
		name            string
		old, start, out int64
	}{
		{"first", 0, 5000, 5000},
		{"under a minute", 5000, 5059, 5000},
		{"within a tenth of the wait", 5000, 5300, 5000},
		{"more than a tenth", 5000, 5500, 5500},
		{"earlier by more than a minute, close", 1100, 1030, 1030},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := admission.Steady(tc.old, tc.start, now); got != tc.out {
				t.Errorf("steady(%d, %d, %d) = %d, want %d", tc.old, tc.start, now, got, tc.out)
			}
		})
	}
}
