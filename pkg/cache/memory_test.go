package cache

import (
	"fmt"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkCacheMemory reports the heap the cache itself holds per pod
// (B/pod), beyond the pod objects, which the informers hold anyway: with
// queue admission on, half the pods bound members of gangs of 10 and half
// bound singletons, fed as the scheduler's pod informer feeds them. The budget is 1 KiB per pod at 50,000 pods.
func BenchmarkCacheMemory(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var perPod float64
			for b.Loop() {
				pods := make([]*v1.Pod, n)
				for i := range pods {
					group := ""
					if i < n/2 {
						group = fmt.Sprint("g", i/10)
					}
					pods[i] = mkPod("ns", fmt.Sprint("p", i), group, ours, boundTo("n1"))
				}
				before := heapInUse()
				c, _, _ := newAdmissionCache(b, singletons, mkQueue("q"))
				c.ApplyNode(logger, mkNode("n1", "1000000"))
				for g := range n / 20 {
					addPG(c, mkPG("ns", fmt.Sprint("g", g), 10))
				}
				for _, p := range pods {
					c.ApplyPod(logger, nil, p)
				}
				perPod = float64(heapInUse()-before) / float64(n)
				runtime.KeepAlive(c)
				runtime.KeepAlive(pods)
			}
			b.ReportMetric(perPod, "B/pod")
		})
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
