package queue

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestHeadIsOrderCut: after random Sets and Deletes (ties of priority and
// creation time included), Head(q, n) is Order(q) cut at n for every n.
func TestHeadIsOrderCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := NewPending()
	queues := []string{"a", "b"}
	for step := range 3000 {
		key := "g" + itoa(rng.IntN(200))
		if rng.IntN(4) == 0 {
			p.Delete(k(key))
		} else {
			p.Set(Group{Key: k(key), Queue: queues[rng.IntN(2)], Priority: int32(rng.IntN(3)),
				Created: t0.Add(time.Duration(rng.IntN(20)) * time.Millisecond),
				Request: cores(1), Members: int32(rng.IntN(2) + 1), MinMember: 1})
		}
		if step%300 != 0 {
			continue
		}
		for _, q := range queues {
			order := p.Order(q)
			for _, n := range []int{0, 1, 2, 5, 20, len(order), len(order) + 3} {
				want := order[:min(n, len(order))]
				if got := p.Head(q, n); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("step %d queue %s: Head(%d) = %v, want %v", step, q, n, got, want)
				}
			}
		}
	}
	if p.Head("no-such-queue", 5) != nil {
		t.Error("Head of an unknown queue is not empty")
	}
}

// BenchmarkHead: the cost of the first 20 of a long queue does not grow
// with the queue.
func BenchmarkHead(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		p := NewPending()
		for i := range size {
			p.Set(Group{Key: k("g" + itoa(i)), Queue: "q", Priority: int32(i % 7),
				Created: t0.Add(time.Duration(i%1000) * time.Millisecond), Request: cores(1), Members: 1, MinMember: 1})
		}
		b.Run("pending="+itoa(size), func(b *testing.B) {
			for b.Loop() {
				p.Head("q", 20)
			}
		})
	}
}
