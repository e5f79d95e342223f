package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/caldera-sched/caldera/pkg/placement"
)

// benchCluster is 1,000 nodes of 64 cpu / 256 GiB (cpu in millicores,
// memory in MiB) running 50 pods each, about 50 cpu a node, that end over
// the next day (3% without a limit but with an estimate, 2% with neither);
// the heads of 100 queues (2 each: gangs of 4-16 members of 8-32 cpu, a
// tenth restricted to a quarter of the nodes); and 10,000 backfill
// candidates of 1-4 members of 0.5-4 cpu, a tenth unbounded.
type benchCluster struct {
	free    []int64
	running []Alloc
	gangs   []Gang
	jobs    []Job
}

func newBenchCluster() *benchCluster {
	const nodes, perNode = 1000, 50
	rng := rand.New(rand.NewPCG(1, 2))
	c := &benchCluster{free: make([]int64, nodes*2)}
	for n := range nodes {
		c.free[n*2], c.free[n*2+1] = 64000, 256<<10
		for range perNode {
			cpu := 500 + rng.Int64N(1500)
			a := Alloc{Node: int32(n), Request: []int64{cpu, cpu * (2 + rng.Int64N(4))}, End: 1 + rng.Int64N(86400)}
			switch rng.IntN(100) {
			case 0, 1, 2:
				a.End, a.EstimatedEnd = Unbounded, 1+rng.Int64N(86400)
			case 3, 4:
				a.End = Unbounded
			}
			c.free[n*2] -= a.Request[0]
			c.free[n*2+1] -= a.Request[1]
			c.running = append(c.running, a)
		}
	}
	rack := make([]int32, 0, nodes/4)
	for n := range nodes / 4 {
		rack = append(rack, int32(n*4))
	}
	for q := range 200 {
		cpu := 8000 * (1 + rng.Int64N(4))
		cl := placement.Class{Request: []int64{cpu, cpu * 4}, Count: 4 + rng.IntN(13)}
		if q%10 == 0 {
			cl.Nodes = rack
		}
		c.gangs = append(c.gangs, Gang{Key: "g", Classes: []placement.Class{cl}, Limit: 3600 * (1 + rng.Int64N(8))})
	}
	for range 10000 {
		cpu := 500 * (1 + rng.Int64N(8))
		j := Job{Classes: []placement.Class{{Request: []int64{cpu, cpu * 2}, Count: 1 + rng.IntN(4)}}, Limit: 600 + rng.Int64N(86400)}
		if rng.IntN(10) == 0 {
			j.Limit = Unbounded
		}
		c.jobs = append(c.jobs, j)
	}
	return c
}

// BenchmarkTimeline: building the timeline of 50,000 pods once, and keeping
// it current with one pod starting and one ending (the per-event cost).
func BenchmarkTimeline(b *testing.B) {
	c := newBenchCluster()
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			NewTimeline(2, c.free, c.running)
		}
	})
	b.Run("add-remove", func(b *testing.B) {
		tl := NewTimeline(2, c.free, c.running)
		a := Alloc{Node: 7, Request: []int64{1000, 2000}, End: 43200}
		for b.Loop() {
			tl.Add(a)
			tl.Remove(a)
		}
	})
}

// BenchmarkPass is one admission pass over the bench cluster: the plan
// (Reset: checkpoints), the 200 reservations, and the 10,000 backfill
// checks with every accepted job committed. Each sub-benchmark includes the
// ones before it.
func BenchmarkPass(b *testing.B) {
	c := newBenchCluster()
	tl := NewTimeline(2, c.free, c.running)
	p := New(tl, 0, len(c.gangs))
	var reserved, accepted int
	pass := func(reserve, backfill bool) {
		p.Reset(tl, 0, len(c.gangs))
		reserved, accepted = 0, 0
		if reserve {
			for _, g := range c.gangs {
				if _, err := p.Reserve(g); err == nil {
					reserved++
				}
			}
		}
		if backfill {
			for _, j := range c.jobs {
				if steps, ok := p.CanBackfill(j); ok {
					p.Commit(j, steps)
					accepted++
				}
			}
		}
	}
	b.Run("plan", func(b *testing.B) {
		for b.Loop() {
			pass(false, false)
		}
	})
	b.Run("reserve-200", func(b *testing.B) {
		for b.Loop() {
			pass(true, false)
		}
		b.ReportMetric(float64(reserved), "reserved")
	})
	b.Run("reserve-200-backfill-10k", func(b *testing.B) {
		for b.Loop() {
			pass(true, true)
		}
		b.ReportMetric(float64(reserved), "reserved")
		b.ReportMetric(float64(accepted), "accepted")
	})
}
