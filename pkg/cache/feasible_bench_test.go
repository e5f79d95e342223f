package cache

import (
	"fmt"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// BenchmarkAdmissionPassPlacement is one admission pass with the placement
// check over 10,000 pending gangs (4 members each) in 100 queues on 1,000
// nodes. Every node runs a 2-cpu pod outside Caldera; in the "fragmented"
// case one node (the last by name) has 3 cpu free, so every gang (4 x 3
// cpu) passes the aggregate checks and its placement visits every node
// before it fails:
// the worst case of the check, run for every group the pass examines. In
// "full" the aggregate checks refuse first. "fragmented-cold" is
// "fragmented" with the remembered classes dropped before every pass (as
// if every gang examined had changed since the last). Nothing is admitted,
// so every iteration does the same work. Budget: 10 ms per pass.
func BenchmarkAdmissionPassPlacement(b *testing.B) {
	for _, tc := range []struct {
		name    string
		foreign string // what the pod on each node requests
	}{{"fragmented", "2"}, {"fragmented-cold", "2"}, {"full", "4"}} {
		b.Run(tc.name, func(b *testing.B) {
			c := hundredQueues(b)
			for i := range 1000 {
				n := fmt.Sprintf("n%04d", i)
				c.ApplyNode(logger, mkNode(n, "4"))
				req := tc.foreign
				if i == 999 && tc.name != "full" {
					req = "1"
				}
				c.onAnyPod(mkPod("sys", "r"+n, "", cpu(req), boundTo(n)), false)
			}
			for g := range 10_000 {
				name := fmt.Sprint("g", g)
				addPG(c, mkPG("ns", name, 4, pgQueue(fmt.Sprint("q", g%100)), pgCreatedAt(t0.Add(time.Duration(g)*time.Millisecond))))
				for m := range 4 {
					p := memberOf("ns", fmt.Sprint(name, "-", m), name, cpu("3"))
					add(c, p)
					c.onAnyPod(p, false)
				}
			}
			pass(c, t0)
			if got := admitted(c, memberOf("ns", "g0-0", "g0")); got.ok {
				b.Fatalf("g0 admitted: %+v", got)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if tc.name == "fragmented-cold" {
					b.StopTimer()
					c.mu.Lock()
					clear(c.feasible.Memos)
					c.mu.Unlock()
					b.StartTimer()
				}
				c.AdmissionPass(logger, t0)
			}
			b.StopTimer()
			if got := admitted(c, memberOf("ns", "g0-0", "g0")); tc.name != "full" && got.msg != "members not placeable: 1/4 fit on the free nodes" {
				b.Fatalf("g0: %+v", got)
			}
		})
	}
}

// BenchmarkAdmissionPassReservations is a pass that plans over time, at the
// size the planning has to hold: 1,000 nodes of 64 cpu, each running 50
// pods of 1 cpu that end by their limits (50,000 releases, spread over an
// hour), and 10,000 pending groups in 100 queues: gangs of four 16-cpu
// members that fit no node now (14 cpu free each), so every queue's head
// is reserved for (64 in all, the pass's bound), and behind each a 4-cpu
// pod without a limit, which fits now but would delay them.
func BenchmarkAdmissionPassReservations(b *testing.B) {
	c := hundredQueues(b)
	benchCluster(c, func(int, int) (string, bool) { return "", false })
	benchGangs(c, func(int) (string, int) { return "16", 4 })
	for g := range 5_000 {
		at := t0.Add(time.Duration(g)*time.Millisecond + time.Microsecond)
		c.onAnyPod(single("ns", fmt.Sprint("s", g), cpu("4"), inQueue(fmt.Sprint("q", g%100)), createdAt(at)), false)
	}
	now := t0.Add(10 * time.Second)
	pass(c, now)
	if n := len(c.feasible.Timed); n != admission.MaxReservations {
		b.Fatalf("%d reservations, want %d", n, admission.MaxReservations)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.AdmissionPass(logger, now)
	}
}

// hundredQueues is a cache with singletons admitted, queues q0..q99 and
// the starvation guard off, as the pass benchmarks start from.
func hundredQueues(b *testing.B) *Cache {
	queues := make([]*qapi.Queue, 100)
	for i := range queues {
		queues[i] = mkQueue(fmt.Sprint("q", i))
	}
	opts := singletons
	opts.StarvationThreshold = -1
	c, _, _ := newAdmissionCache(b, opts, queues...)
	return c
}

// BenchmarkAdmissionPassEstimates is BenchmarkAdmissionPassReservations's
// cluster with half its running pods without a limit (25,000 on 1,000
// nodes, in the 100 queues, each queue's run times learned): the heads
// past the 64 reservations get estimated starts. "planning" runs the
// estimate in every pass (as once per estimateEvery does), "between"
// the passes in between, which keep the last estimates.
func BenchmarkAdmissionPassEstimates(b *testing.B) {
	c := hundredQueues(b)
	benchCluster(c, func(i, k int) (string, bool) { return fmt.Sprint("q", (i+k)%100), k%2 == 1 })
	for q := range 100 {
		for s := range 10 {
			c.adm.Est.Learned().Observe(fmt.Sprint("q", q), int64(600+60*s))
		}
	}
	benchGangs(c, func(g int) (string, int) {
		if g%2 == 1 {
			return "40", 2 // fits only once pods without a limit end: an estimate
		}
		return "16", 4 // fits once pods with a limit end: a reservation
	})
	now := t0.Add(10 * time.Second)
	pass(c, now)
	if len(c.adm.Est.Starts) == 0 {
		b.Fatalf("no estimated start (%d reservations, %d unheld, %d rooms without a limit)", len(c.feasible.Timed), len(c.feasible.Pass.Tp.Unheld), len(c.adm.Est.Room))
	}
	b.Logf("%d reservations, %d estimated starts, %d rooms without a limit", len(c.feasible.Timed), len(c.adm.Est.Starts), len(c.adm.Est.Room))
	for _, planning := range []bool{true, false} {
		name := map[bool]string{true: "planning", false: "between"}[planning]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if planning {
					c.adm.Est.Planned = 0
				}
				c.AdmissionPass(logger, now)
			}
		})
	}
}

// benchCluster adds 1,000 nodes of 64 cpu, each running 50 1-cpu pods:
// pod k on node i runs in queue q without a limit, since k minutes
// before t0, when unlimited(i, k) answers q and true; else outside the
// queues, since t0, with a limit of 60 s to an hour.
func benchCluster(c *Cache, unlimited func(i, k int) (string, bool)) {
	for i := range 1000 {
		n := fmt.Sprintf("n%04d", i)
		c.ApplyNode(logger, mkNode(n, "64"))
		for k := range 50 {
			name := fmt.Sprint("r", n, "-", k)
			if q, ok := unlimited(i, k); ok {
				c.onAnyPod(single("sys", name, cpu("1"), inQueue(q), boundTo(n), runningSince(t0.Add(-time.Duration(k)*time.Minute))), false)
				continue
			}
			c.onAnyPod(mkPod("sys", name, "", cpu("1"), boundTo(n), runningSince(t0), limit(60+(i*50+k)%3600)), false)
		}
	}
}

// benchGangs adds 5,000 pending gangs, oldest first, gang g in queue
// q(g mod 100) with shape(g)'s members of its cpu each.
func benchGangs(c *Cache, shape func(g int) (cpu string, members int)) {
	for g := range 5_000 {
		name := fmt.Sprint("g", g)
		size, members := shape(g)
		at := t0.Add(time.Duration(g) * time.Millisecond)
		addPG(c, mkPG("ns", name, int32(members), pgQueue(fmt.Sprint("q", g%100)), pgCreatedAt(at)))
		for m := range members {
			p := memberOf("ns", fmt.Sprint(name, "-", m), name, cpu(size))
			add(c, p)
			c.onAnyPod(p, false)
		}
	}
}
