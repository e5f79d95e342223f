package queue

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

func TestPendingSetDelete(t *testing.T) {
	p := NewPending()
	if p.Len() != 0 || p.QueueLen("q") != 0 || len(p.Queues()) != 0 || p.PendingRequest("q") != nil || p.Order("q") != nil {
		t.Fatal("a new Pending is not empty")
	}
	p.Set(grp("ns/a", "q", 0, resources.List{resources.CPU: 1000, "memory": 10}))
	p.Set(grp("ns/b", "q", 1, cores(2)))
	p.Set(Group{Key: k("ns/c"), Queue: "r", Request: cores(4), Members: 0, MinMember: 2})
	if p.Len() != 3 || p.QueueLen("q") != 2 || p.QueueLen("r") != 1 {
		t.Fatalf("Len %d, QueueLen(q) %d, QueueLen(r) %d", p.Len(), p.QueueLen("q"), p.QueueLen("r"))
	}
	qs := p.Queues()
	sort.Strings(qs)
	if !reflect.DeepEqual(qs, []string{"q", "r"}) {
		t.Errorf("Queues() = %v", qs)
	}
	if got, want := p.PendingRequest("q"), (resources.List{resources.CPU: 3000, "memory": 10}); !got.Equal(want) {
		t.Errorf("PendingRequest(q) = %v, want %v", got, want)
	}
	// Groups waiting for members are not demand (they cannot be admitted).
	if got := p.PendingRequest("r"); len(got) != 0 {
		t.Errorf("PendingRequest(r) = %v, want nothing while ns/c waits for members", got)
	}
	if g, ok := p.Get(k("ns/b")); !ok || g.Queue != "q" {
		t.Errorf("Get(ns/b) = %+v, %v", g, ok)
	}
	if d, ok := p.Decision(k("ns/a")); !ok || d.Check != CheckNone || d.Message() != "waiting for admission to queue q" {
		t.Errorf("Decision(ns/a) before any pass = %+v", d)
	}
	if d, _ := p.Decision(k("ns/c")); d.Message() != "waiting for members: 0/2" {
		t.Errorf("Decision(ns/c) = %q", d.Message())
	}

	// Update: ns/a moves to r with a new request; ns/c gets its members.
	p.Set(grp("ns/a", "r", 0, cores(1)))
	p.Set(Group{Key: k("ns/c"), Queue: "r", Request: cores(4), Members: 2, MinMember: 2})
	if p.QueueLen("q") != 1 || p.QueueLen("r") != 2 || p.Len() != 3 {
		t.Fatalf("after moving: QueueLen(q) %d, QueueLen(r) %d", p.QueueLen("q"), p.QueueLen("r"))
	}
	if got := p.PendingRequest("q"); !got.Equal(cores(2)) {
		t.Errorf("PendingRequest(q) after the move = %v", got)
	}
	if got := p.PendingRequest("r"); !got.Equal(cores(5)) {
		t.Errorf("PendingRequest(r) after the move = %v", got)
	}

	if !p.Delete(k("ns/b")) || p.Delete(k("ns/b")) || p.Delete(k("never")) {
		t.Error("Delete results")
	}
	if p.QueueLen("q") != 0 || slices.Contains(p.Queues(), "q") {
		t.Error("an emptied queue is still listed")
	}
	if _, ok := p.Decision(k("ns/b")); ok {
		t.Error("Decision of a deleted group")
	}
	if _, ok := p.Get(k("ns/b")); ok {
		t.Error("Get of a deleted group")
	}
}

func TestPendingSetForgetsTheDecision(t *testing.T) {
	w := world{specs: []Spec{{Name: "q", Capability: cores(1)}}, total: cores(4)}
	p := NewPending()
	p.Set(grp("ns/a", "q", 0, cores(1)))
	p.Set(grp("ns/b", "q", 1, cores(1)))
	w.pass(p, t0)
	if d, _ := p.Decision(k("ns/b")); d.Check != CheckCapability {
		t.Fatalf("Decision(b) = %q", d.Message())
	}
	p.Set(grp("ns/b", "q", 1, cores(1)))
	if d, _ := p.Decision(k("ns/b")); d.Check != CheckNone {
		t.Errorf("Decision(b) after Set = %q, want none", d.Message())
	}
}

// TestPendingHeapOrder applies random Sets and Deletes and checks that each
// queue's heap pops its groups in (priority, created, key) order.
func TestPendingHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := NewPending()
	live := map[string]Group{}
	queues := []string{"a", "b", "c"}
	for step := range 5000 {
		key := "g" + itoa(rng.IntN(300))
		switch rng.IntN(4) {
		case 0:
			p.Delete(k(key))
			delete(live, key)
		default:
			g := Group{
				Key:       k(key),
				Queue:     queues[rng.IntN(len(queues))],
				Priority:  int32(rng.IntN(3)),
				Created:   t0.Add(time.Duration(rng.IntN(50)) * time.Millisecond),
				Request:   cores(int64(rng.IntN(3))),
				Members:   int32(rng.IntN(3)),
				MinMember: 1,
			}
			p.Set(g)
			live[key] = g
		}
		if step%500 != 0 {
			continue
		}
		for _, qn := range queues {
			checkHeap(t, p, qn, live)
		}
	}
	if p.Len() != len(live) {
		t.Fatalf("Len %d, want %d", p.Len(), len(live))
	}
}

func checkHeap(t *testing.T, p *Pending, queue string, live map[string]Group) {
	t.Helper()
	var want []Group
	sum := int64(0)
	for _, g := range live {
		if g.Queue == queue {
			if g.Ready() {
				sum += g.Request[resources.CPU]
				want = append(want, g)
			}
		}
	}
	if got := p.PendingRequest(queue)[resources.CPU]; got != sum {
		t.Fatalf("queue %s: pending cpu %d, want %d", queue, got, sum)
	}
	sort.Slice(want, func(i, j int) bool {
		a, b := want[i], want[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.Key.Compare(b.Key) < 0
	})
	q := p.queues[queue]
	if q == nil {
		if len(want) != 0 {
			t.Fatalf("queue %s missing", queue)
		}
		return
	}
	for i, e := range q.heap {
		if e.pos != i || e.where != inHeap || e.q != q {
			t.Fatalf("queue %s: entry %s at %d has pos %d, where %d", queue, e.g.Key, i, e.pos, e.where)
		}
	}
	// Pop a copy of the heap.
	cp := &pqueue{heap: slices.Clone(q.heap)}
	saved := make([]int, len(cp.heap))
	for i, e := range cp.heap {
		saved[i] = e.pos
	}
	var got []string
	for len(cp.heap) > 0 {
		got = append(got, short(cp.pop().g.Key))
	}
	for i, e := range q.heap {
		e.pos = saved[i]
	}
	var keys []string
	for _, g := range want {
		keys = append(keys, short(g.Key))
	}
	if !reflect.DeepEqual(got, keys) {
		t.Fatalf("queue %s pops %v, want %v", queue, got, keys)
	}
	// Order lists the same, without touching the heap.
	var order []string
	for _, key := range p.Order(queue) {
		order = append(order, short(key))
	}
	if !reflect.DeepEqual(order, keys) && (len(order) != 0 || len(keys) != 0) {
		t.Fatalf("queue %s: Order %v, want %v", queue, order, keys)
	}
}
