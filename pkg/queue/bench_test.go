package queue

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// benchWorld is a cluster of 100 queues (weights 1-4, a few with parents and
// capabilities) and n pending groups spread over them.
type benchWorld struct {
	tree   *Tree
	groups []Group
	usage  map[string]Usage
	total  resources.List
}

func newBenchWorld(n, queues int) *benchWorld {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	w := &benchWorld{usage: map[string]Usage{}}
	specs := make([]Spec, 0, queues)
	for i := range queues {
		// Reclaimable matters only with Options.Reclaim (BenchmarkPassLend).
		s := Spec{Name: fmt.Sprintf("q%03d", i), Weight: int32(1 + i%4), Reclaimable: true}
		if i >= 10 && i%10 == 0 {
			s.Capability = resources.List{resources.CPU: 200_000}
		}
		if i >= 90 { // a small hierarchy under q089
			s.Parent = "q089"
		}
		specs = append(specs, s)
	}
	w.tree = BuildTree(specs)
	var need int64
	for i := range n {
		cpu := int64(1+rng.IntN(4)) * 1000
		need += cpu
		w.groups = append(w.groups, Group{
			Key:       GroupUnit(fmt.Sprintf("ns%d", i%37), fmt.Sprintf("g%d", i)),
			Queue:     specs[rng.IntN(queues)].Name,
			Priority:  int32(rng.IntN(3)),
			Created:   t0.Add(time.Duration(rng.IntN(3600)) * time.Second),
			Request:   resources.List{resources.CPU: cpu, "memory": cpu << 20},
			Members:   1,
			MinMember: 1,
		})
	}
	w.total = resources.List{resources.CPU: need, "memory": need << 20}
	for _, s := range specs {
		w.usage[s.Name] = Usage{}
	}
	return w
}

// shares divides the cluster with the Pending's current demand.
// pending is a Pending holding every group of the world.
func (w *benchWorld) pending() *Pending {
	p := NewPending()
	for _, g := range w.groups {
		p.Set(g)
	}
	return p
}

func (w *benchWorld) shares(p *Pending) *Shares {
	for name := range w.usage {
		w.usage[name] = Usage{Pending: p.PendingRequest(name)}
	}
	return Divide(w.tree, w.total, w.usage)
}

// BenchmarkPass measures one admission pass (Divide + Admit) over n pending
// groups in 100 queues:
//   - blocked: the cluster is full, every queue's head is refused; the pass
//     touches each queue's head and Lookahead groups behind it;
//   - partial: the cluster has room for about a tenth of the groups;
//   - drain: everything fits and every group is admitted (the worst case: the
//     pass pops every group).
//
// Groups admitted by a pass are put back, untimed, before the next one.
func BenchmarkPass(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		for _, sc := range []struct {
			name string
			used float64 // fraction of the cluster already used
		}{{"blocked", 1}, {"partial", 0.9}, {"drain", 0}} {
			b.Run(fmt.Sprintf("groups=%d/%s", n, sc.name), func(b *testing.B) {
				w := newBenchWorld(n, 100)
				p := w.pending()
				used := resources.List{
					resources.CPU: int64(float64(w.total[resources.CPU]) * sc.used),
					"memory":      int64(float64(w.total["memory"]) * sc.used),
				}
				c := Cluster{Allocatable: w.total, Used: used}
				opts := Options{OvercommitFactor: 1}
				admitted := 0
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					s := w.shares(p)
					res := p.Admit(s, c, opts, t0)
					admitted = len(res.Admitted)
					if admitted > 0 {
						b.StopTimer()
						for _, o := range res.Admitted {
							p.Set(o.Group)
						}
						b.StartTimer()
					}
				}
				b.ReportMetric(float64(admitted), "admitted/pass")
			})
		}
	}
}

// BenchmarkPassLend is a pass whose every group is refused by its queue's
// deserved share while a tenth of the cluster is idle: the lending phase
// admits what fits (one loan per queue per round), the worst case for it.
func BenchmarkPassLend(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			w := newBenchWorld(n, 100)
			p := w.pending()
			// Every queue already holds twice an even split of the cluster,
			// so each is above its deserved share.
			held := resources.List{resources.CPU: w.total[resources.CPU] / 50, "memory": w.total["memory"] / 50}
			c := Cluster{Allocatable: w.total, Used: resources.List{
				resources.CPU: w.total[resources.CPU] * 9 / 10, "memory": w.total["memory"] * 9 / 10}}
			opts := Options{OvercommitFactor: 1, Reclaim: true, Lend: true}
			lent := 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for name := range w.usage {
					w.usage[name] = Usage{Allocated: held, Pending: p.PendingRequest(name)}
				}
				res := p.Admit(Divide(w.tree, w.total, w.usage), c, opts, t0)
				lent = len(res.Admitted)
				b.StopTimer()
				for _, o := range res.Admitted {
					if !o.Decision.Lent {
						b.Fatalf("%s admitted without a loan: %+v", o.Group.Key, o.Decision)
					}
					p.Set(o.Group)
				}
				b.StartTimer()
			}
			if lent == 0 {
				b.Fatal("nothing lent")
			}
			b.ReportMetric(float64(lent), "lent/pass")
		})
	}
}

// BenchmarkAdmit is BenchmarkPass without Divide, for the blocked case that a
// cache sees on most periodic passes.
func BenchmarkAdmit(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("groups=%d/blocked", n), func(b *testing.B) {
			w := newBenchWorld(n, 100)
			p := w.pending()
			s := w.shares(p)
			c := Cluster{Allocatable: w.total, Used: w.total}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Admit(s, c, Options{}, t0)
			}
		})
	}
}

// BenchmarkDivide measures the fair-share division for 100 queues.
func BenchmarkDivide(b *testing.B) {
	w := newBenchWorld(10_000, 100)
	p := w.pending()
	for name := range w.usage {
		w.usage[name] = Usage{Pending: p.PendingRequest(name)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		Divide(w.tree, w.total, w.usage)
	}
}

// BenchmarkPendingEvent measures the per-event work: one group changes
// (priority and request) in a store of n groups. It should grow with log n.
func BenchmarkPendingEvent(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			w := newBenchWorld(n, 100)
			p := w.pending()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				g := w.groups[i%n]
				g.Priority = int32(i % 5)
				p.Set(g)
			}
		})
	}
}

// BenchmarkPendingAddDelete measures a group arriving and leaving.
func BenchmarkPendingAddDelete(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			w := newBenchWorld(n+1, 100)
			p := NewPending()
			for _, g := range w.groups[:n] {
				p.Set(g)
			}
			extra := w.groups[n]
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Set(extra)
				p.Delete(extra.Key)
			}
		})
	}
}
