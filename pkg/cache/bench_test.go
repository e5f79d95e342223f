package cache

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// benchSizes are the cache sizes, in member pods, that the benchmarks compare:
// the per-operation cost must not grow with them.
var benchSizes = []int{1_000, 100_000}

const benchGroupSize = 10

// benchCache returns a cache holding n pending member pods in groups of
// benchGroupSize, each group with a PodGroup whose minMember is met, plus
// group "ns/short" whose PodGroup asks for more members than it has.
func benchCache(b *testing.B, n int) *Cache {
	b.Helper()
	c, h := newTestCache(b)
	c.ApplyNode(klog.Background(), mkNode("n1", "1000"))
	for i := 0; i < n; i++ {
		g := fmt.Sprint("g", i/benchGroupSize)
		if i%benchGroupSize == 0 {
			addPG(c, mkPG("ns", g, benchGroupSize))
		}
		add(c, mkPod("ns", fmt.Sprint("p", i), g))
	}
	addPG(c, mkPG("ns", "short", benchGroupSize+1))
	for i := range benchGroupSize {
		add(c, mkPod("ns", fmt.Sprint("short", i), "short"))
	}
	if got := len(c.memberOf); got != n+benchGroupSize {
		b.Fatalf("cache holds %d members, want %d", got, n+benchGroupSize)
	}
	h.activations() // drop the records of the fill
	return c
}

// BenchmarkPreEnqueue measures Cache.Enqueueable, which CalderaGang's
// PreEnqueue calls for every pod the queue admits.
func BenchmarkPreEnqueue(b *testing.B) {
	for _, n := range benchSizes {
		c := benchCache(b, n)
		for _, tc := range []struct {
			name string
			pod  *v1.Pod
			ok   bool
		}{
			{"enqueueable", mkPod("ns", "p5", "g0"), true},
			{"waiting-for-members", mkPod("ns", "short0", "short"), false},
			{"not-a-member", mkPod("ns", "solo", ""), true},
		} {
			b.Run(fmt.Sprintf("pods=%d/%s", n, tc.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, ok, _ := c.Enqueueable(tc.pod); ok != tc.ok {
						b.Fatalf("Enqueueable = %v, want %v", ok, tc.ok)
					}
				}
			})
		}
	}
}

// BenchmarkPodEvent measures the pod informer's handlers on a cache of each
// size: an update of one member (its status flips between two versions), and
// a member's add followed by its delete.
func BenchmarkPodEvent(b *testing.B) {
	for _, n := range benchSizes {
		c := benchCache(b, n)
		g := fmt.Sprint("g", n/benchGroupSize/2)
		member := mkPod("ns", fmt.Sprint("p", n/2), g)
		versions := [2]*v1.Pod{next(member, boundTo("n1")), next(member, boundTo("n1"), phase(v1.PodRunning))}
		b.Run(fmt.Sprintf("pods=%d/update", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				update(c, versions[i%2], versions[(i+1)%2])
				i++
			}
		})
		extra := mkPod("ns", "extra", g)
		b.Run(fmt.Sprintf("pods=%d/add+delete", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				add(c, extra)
				del(c, extra)
			}
		})
		if got := counts(c, key("ns", g)); got == nil || got.Members != benchGroupSize {
			b.Fatalf("group %s counts after the benchmark: %+v, want %d members", g, got, benchGroupSize)
		}
	}
}

// BenchmarkAdmissionPodEvent is the scheduler pod informer's event on a cache
// with queue admission: n singletons pending in 100 queues, then one pod bound
// and unbound per op. It must not grow with n (O(1) accounting).
func BenchmarkAdmissionPodEvent(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			queues := make([]*qapi.Queue, 100)
			for i := range queues {
				queues[i] = mkQueue(fmt.Sprint("q", i))
			}
			c, _, _ := newAdmissionCache(b, singletons, queues...)
			c.ApplyNode(logger, mkNode("n1", "100000"))
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = mkPod("ns", fmt.Sprint("s", i), "", ours, inQueue(fmt.Sprint("q", i%100)))
				c.onAnyPod(pods[i], false)
			}
			p := pods[n/2]
			bound := next(p, boundTo("n1"))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c.onAnyPod(bound, false)
				c.onAnyPod(p, false)
			}
		})
	}
}

// BenchmarkRestartApplyPod is a restart's informer list as the cache takes
// it: 20,000 bound pods through ApplyPod, half of them members of bound
// gangs of 8, on a cache with queue admission (W5's shape, at a size a unit
// benchmark can build per op). Reported per pod.
func BenchmarkRestartApplyPod(b *testing.B) {
	const n, gangSize = 20_000, 8
	pods := make([]*v1.Pod, n)
	for i := range pods {
		node := boundTo(fmt.Sprint("n", i%500))
		if i%2 == 0 {
			pods[i] = mkPod("ns", fmt.Sprint("s", i), "", ours, inQueue("q0"), node)
		} else {
			pods[i] = mkPod("ns", fmt.Sprint("m", i), fmt.Sprint("g", i/(2*gangSize)), ours, inQueue("q0"), node)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c, _, _ := newAdmissionCache(b, singletons, mkQueue("q0"))
		b.StartTimer()
		for _, p := range pods {
			c.ApplyPod(logger, nil, p)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
}

// BenchmarkRestartList is a restart as W5 makes it, whole: the PodGroups
// listed first, then 20,000 bound, running pods through ApplyPod (half of
// them members of gangs of 8 that were admitted before the restart) on a
// cache whose gang members are not yet listed, then MembersListed.
// Reported per pod.
func BenchmarkRestartList(b *testing.B) {
	const n, gangSize = 20_000, 8
	pods := make([]*v1.Pod, n)
	for i := range pods {
		opts := []podOpt{ours, inQueue("q0"), boundTo(fmt.Sprint("n", i%500)), phase(v1.PodRunning)}
		if i%2 == 0 {
			pods[i] = mkPod("ns", fmt.Sprint("s", i), "", opts...)
		} else {
			pods[i] = mkPod("ns", fmt.Sprint("m", i), fmt.Sprint("g", i/(2*gangSize)), opts...)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := newListingCache(b, singletons, mkQueue("q0"))
		for g := range n / (2 * gangSize) {
			addPG(c, mkPG("ns", fmt.Sprint("g", g), gangSize, admittedAt, pgQueue("q0")))
		}
		b.StartTimer()
		for _, p := range pods {
			c.ApplyPod(logger, nil, p)
		}
		c.MembersListed(logger)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
}

// BenchmarkQueueStatusUpdates is the status writer's look at the queues,
// made every period, on a cache holding 20,000 bound pods (half singletons,
// half members of gangs of 8) in 4 queues: it must not walk every unit.
func BenchmarkQueueStatusUpdates(b *testing.B) {
	const n, gangSize = 20_000, 8
	queues := []*qapi.Queue{mkQueue("q0"), mkQueue("q1"), mkQueue("q2"), mkQueue("q3")}
	c := newListingCache(b, singletons, queues...)
	for g := range n / (2 * gangSize) {
		addPG(c, mkPG("ns", fmt.Sprint("g", g), gangSize, admittedAt, pgQueue(fmt.Sprint("q", g%4))))
	}
	for i := range n {
		q := fmt.Sprint("q", i%4)
		opts := []podOpt{ours, inQueue(q), boundTo(fmt.Sprint("n", i%500)), phase(v1.PodRunning)}
		if i%2 == 0 {
			c.ApplyPod(logger, nil, mkPod("ns", fmt.Sprint("s", i), "", opts...))
		} else {
			g := i / (2 * gangSize)
			c.ApplyPod(logger, nil, mkPod("ns", fmt.Sprint("m", i), fmt.Sprint("g", g), ours, inQueue(fmt.Sprint("q", g%4)),
				boundTo(fmt.Sprint("n", i%500)), phase(v1.PodRunning)))
		}
	}
	c.MembersListed(logger)
	b.ReportAllocs()
	for b.Loop() {
		c.QueueStatusUpdates()
	}
}
