package reclaim

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// fuzzInput decodes bytes into a small world: up to 4 nodes, 24 pods in
// queues a, b, c, gangs among them, and a preemptor in queue b.
func fuzzInput(data []byte) Input {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	queues := []string{"a", "b", "c"}
	in := Input{Queues: map[string]Queue{}, Groups: map[string]Group{}}
	nNodes := 1 + next()%4
	for i := range nNodes {
		in.Nodes = append(in.Nodes, Node{Name: fmt.Sprintf("n%d", i), Free: cpu(int64(next()%3) * 500), Eligible: next()%4 != 0})
	}
	for _, q := range queues {
		in.Queues[q] = Queue{
			Allocated:   cpu(int64(next()%20) * 1000),
			Deserved:    cpu(int64(next()%12) * 1000),
			Guarantee:   cpu(int64(next()%4) * 1000),
			Reclaimable: next()%3 != 0,
		}
	}
	nPods := next() % 25
	for i := range nPods {
		q := queues[next()%3]
		g := ""
		if k := next() % 4; k > 0 {
			g = fmt.Sprintf("%s/g%d", q, k)
			in.Groups[g] = Group{MinMember: int32(next() % 4)}
		}
		in.Pods = append(in.Pods, Pod{
			ID: fmt.Sprintf("p%d", i), Node: fmt.Sprintf("n%d", next()%(nNodes+1)), Group: g, Queue: q,
			Priority: int32(next() % 3), Started: t0.Add(time.Duration(next()) * time.Minute),
			Request: cpu(int64(1+next()%4) * 500), Disruptive: next()%5 == 0,
		})
	}
	in.Preemptor = Preemptor{Queue: "b", Priority: int32(next() % 4)}
	if next()%2 == 0 {
		in.Preemptor.Group = "b/g1"
	}
	for range 1 + next()%3 {
		in.Preemptor.Members = append(in.Preemptor.Members, cpu(int64(1+next()%4)*500))
	}
	in.Options = Options{Reclaim: next()%4 != 0, Preempt: next()%4 != 0, MinRuntime: time.Duration(next()%3) * time.Hour, Now: t0.Add(4 * time.Hour)}
	return in
}

// FuzzDecide checks the invariants of any plan: victims are eligible for
// the plan's action, no queue is reclaimed below its deserved share on every
// freed resource nor below its guarantee, no gang is left between 0 and
// minMember, the preemptor's queue stays within its share when reclaiming,
// the freed room can hold the members, and the decision is deterministic.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{3, 0, 1, 1, 1, 0, 3, 16, 8, 0, 1, 0, 8, 0, 1, 2, 4, 2, 1, 10, 0, 0, 0, 0, 1, 0, 2, 0, 0, 3, 1, 1, 1})
	f.Add([]byte{1, 2, 1, 12, 6, 1, 1, 0, 10, 0, 1, 2, 3, 3, 9, 2, 1, 0, 2, 1, 9, 0, 1, 1, 0, 0, 7, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		plan, ok, why := Decide(in)
		again, ok2, why2 := Decide(in)
		if ok != ok2 || why != why2 || !reflect.DeepEqual(plan, again) {
			t.Fatalf("not deterministic: %v %v %q / %v %v %q", plan, ok, why, again, ok2, why2)
		}
		if !ok {
			if why == "" {
				t.Fatal("no plan and no reason")
			}
			return
		}
		if len(plan.Victims) == 0 {
			t.Fatal("a plan without victims")
		}
		taken := map[string]resources.List{}
		lost := map[string]int32{}
		seen := map[int]bool{}
		freed := resources.List{}
		nodes := map[string]Node{}
		for _, n := range in.Nodes {
			nodes[n.Name] = n
		}
		if !nodes[plan.Node].Eligible {
			t.Fatalf("plan node %q is not eligible", plan.Node)
		}
		for _, v := range plan.Victims {
			if seen[v] {
				t.Fatalf("victim %d twice", v)
			}
			seen[v] = true
			p := in.Pods[v]
			if in.Preemptor.Group != "" && p.Group == in.Preemptor.Group {
				t.Fatalf("the preemptor's own pod %s is a victim", p.ID)
			}
			if in.Options.MinRuntime > 0 && in.Options.Now.Sub(p.Started) < in.Options.MinRuntime {
				t.Fatalf("victim %s is younger than the minimum runtime", p.ID)
			}
			switch plan.Mode {
			case Reclaim:
				if p.Queue == in.Preemptor.Queue || !in.Queues[p.Queue].Reclaimable {
					t.Fatalf("reclaim victim %s of queue %s", p.ID, p.Queue)
				}
			case Preempt:
				if p.Queue != in.Preemptor.Queue || p.Priority >= in.Preemptor.Priority {
					t.Fatalf("preempt victim %s of queue %s priority %d", p.ID, p.Queue, p.Priority)
				}
			default:
				t.Fatalf("mode %v", plan.Mode)
			}
			taken[p.Queue] = taken[p.Queue].Add(p.Request)
			if p.Group != "" {
				lost[p.Group]++
			}
			if nodes[p.Node].Eligible {
				freed.Add(p.Request)
			}
		}
		if plan.Mode == Reclaim {
			for q, tk := range taken {
				qs := in.Queues[q]
				for k, g := range qs.Guarantee {
					if g > 0 && qs.Allocated[k]-tk[k] < g {
						t.Fatalf("queue %s reclaimed below its guarantee: %v - %v < %v", q, qs.Allocated, tk, qs.Guarantee)
					}
				}
				if qs.Allocated[resources.CPU]-tk[resources.CPU] < qs.Deserved[resources.CPU] {
					t.Fatalf("queue %s reclaimed below its deserved share: %v - %v < %v", q, qs.Allocated, tk, qs.Deserved)
				}
			}
			need := resources.List{}
			for _, m := range in.Preemptor.Members {
				need.Add(m)
			}
			pq := in.Queues[in.Preemptor.Queue]
			if pq.Allocated[resources.CPU]+need[resources.CPU] > pq.Deserved[resources.CPU] {
				t.Fatalf("the preemptor's queue reclaims beyond its share")
			}
		}
		running := map[string]int32{}
		for _, p := range in.Pods {
			if p.Group != "" {
				running[p.Group]++
			}
		}
		for g, n := range lost {
			if min := in.Groups[g].MinMember; min > 1 && n < running[g] && running[g]-n < min {
				t.Fatalf("gang %s left with %d of %d running, minMember %d", g, running[g]-n, running[g], min)
			}
		}
		room, need := resources.List{}, resources.List{}
		for _, n := range in.Nodes {
			if n.Eligible {
				room.Add(n.Free)
			}
		}
		room.Add(freed)
		for _, m := range in.Preemptor.Members {
			need.Add(m)
		}
		if !need.FitsIn(room) {
			t.Fatalf("members need %v but eligible room after evictions is %v", need, room)
		}
	})
}
