package cache

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkReclaimInput is CalderaReclaim's per-attempt read of the cache
// in W7's shape (docs/performance-scale.md): nodes x two bound 16-cpu
// low-priority pods in gangs of 8, and a pending gang of 8 high-priority
// members preempting in the same queue. PostFilter calls it once per
// planning attempt over every running pod.
func BenchmarkReclaimInput(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			c, _, _ := newAdmissionCache(b, singletons, mkQueue("q"))
			enableEvictions(c, false, true)
			var running []*v1.Pod
			for n := range nodes {
				node := fmt.Sprint("n", n)
				c.ApplyNode(logger, mkNode(node, "32"))
				for k := range 2 {
					i := n*2 + k
					g := fmt.Sprint("low", i/8)
					if i%8 == 0 {
						addPG(c, mkPG("low", g, 8, pgQueue("q")))
					}
					p := memberOf("low", fmt.Sprint("p", i), g, cpu("16"), priority(1), boundTo(node), phase(v1.PodRunning))
					podEvent(c, p)
					running = append(running, p)
				}
			}
			addPG(c, mkPG("ns", "hi", 8, pgQueue("q")))
			var hi []*v1.Pod
			for m := range 8 {
				p := memberOf("ns", fmt.Sprint("hi", m), "hi", cpu("16"), priority(1000))
				podEvent(c, p)
				hi = append(hi, p)
			}
			pass(c, t0)
			leaving := func(*v1.Pod) bool { return false }
			in, ok, why := c.ReclaimInput(hi[0], running, leaving)
			if !ok || len(in.Pods) != 2*nodes || len(in.Preemptor.Members) != 8 {
				b.Fatalf("ReclaimInput = %d pods, %d members, %v, %q", len(in.Pods), len(in.Preemptor.Members), ok, why)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.ReclaimInput(hi[0], running, leaving)
			}
		})
	}
}
