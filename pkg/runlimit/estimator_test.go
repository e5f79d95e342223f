package runlimit

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func TestBins(t *testing.T) {
	if upper(numBins-1) != MaxSeconds || bin(MaxSeconds) != numBins-1 {
		t.Fatalf("last bin: upper %d, bin(Max) %d of %d", upper(numBins-1), bin(MaxSeconds), numBins)
	}
	if numBins > treeSize {
		t.Fatalf("%d bins do not fit a tree of %d", numBins, treeSize)
	}
	// Bins tile [1, MaxSeconds] in order: bin b is (upper(b-1), upper(b)].
	lo := int64(1)
	for b := range numBins {
		hi := upper(b)
		if hi < lo || bin(lo) != b || bin(hi) != b {
			t.Fatalf("bin %d: [%d, %d], bin(lo) %d, bin(hi) %d", b, lo, hi, bin(lo), bin(hi))
		}
		// At most 6.25% wide above the exact range.
		if b >= linear && (hi-lo+1)*16 > lo {
			t.Fatalf("bin %d: [%d, %d] is wider than 1/16 of its start", b, lo, hi)
		}
		lo = hi + 1
	}
	for _, tc := range []struct{ v, upper int64 }{
		{-5, 1}, {0, 1}, {1, 1}, {64, 64}, {65, 67}, {1000, 1023}, {3600, 3711}, {math.MaxInt64, MaxSeconds},
	} {
		if got := upper(bin(tc.v)); got != tc.upper {
			t.Errorf("upper(bin(%d)) = %d, want %d", tc.v, got, tc.upper)
		}
	}
}

// obs is one finished job: its queue and run time.
type obs struct {
	queue string
	s     int64
}

// seq is the queue's jobs with these run times, in order.
func seq(queue string, vals ...int64) []obs {
	var out []obs
	for _, v := range vals {
		out = append(out, obs{queue, v})
	}
	return out
}

// ones is n run times of v.
func ones(n int, v int64) []int64 { return slices.Repeat([]int64{v}, n) }

// tens are 10 to 100 s: exact bins up to 64, then bins ending at 71, 83,
// 95 and 103.
var tens = []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}

// estimateCase is one rule of Estimate: a configuration, the jobs seen, and
// the answer for a job of queue that has run ranFor.
type estimateCase struct {
	name   string
	cfg    Config
	obs    []obs
	queue  string
	ranFor int64
	want   Estimate
}

var estimateCases = []estimateCase{
	{name: "nothing seen: the default", queue: "a",
		want: Estimate{Seconds: DefaultSeconds, Basis: FromDefault}},
	{name: "nothing seen, long runner: twice its run", queue: "a", ranFor: 5000,
		want: Estimate{Seconds: 10000, Basis: FromDefault}},
	{name: "configured default", cfg: Config{Default: 120}, queue: "a",
		want: Estimate{Seconds: 120, Basis: FromDefault}},
	{name: "queue's 0.9 quantile by nearest rank", obs: seq("a", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), queue: "a",
		want: Estimate{Seconds: 9, Basis: FromQueue, Samples: 10}},
	{name: "order of arrival does not matter", obs: seq("a", 10, 3, 7, 1, 9, 2, 8, 4, 6, 5), queue: "a",
		want: Estimate{Seconds: 9, Basis: FromQueue, Samples: 10}},
	{name: "above 64 s: the bin's upper edge", obs: seq("a", ones(10, 1000)...), queue: "a",
		want: Estimate{Seconds: 1023, Basis: FromQueue, Samples: 10}},
	{name: "quantile 1 is the largest", cfg: Config{Quantile: 1}, obs: seq("a", 1, 2, 3, 4, 50), queue: "a",
		want: Estimate{Seconds: 50, Basis: FromQueue, Samples: 5}},
	{name: "a tiny quantile is the smallest", cfg: Config{Quantile: 1e-9}, obs: seq("a", 7, 2, 3, 4, 50), queue: "a",
		want: Estimate{Seconds: 2, Basis: FromQueue, Samples: 5}},
	{name: "NaN quantile: the default 0.9", cfg: Config{Quantile: math.NaN()}, obs: seq("a", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), queue: "a",
		want: Estimate{Seconds: 9, Basis: FromQueue, Samples: 10}},
	{name: "too few in the queue: the cluster's", obs: append(seq("a", 1, 1, 1, 1), seq("b", 40, 40, 40, 40, 40, 40)...), queue: "a",
		want: Estimate{Seconds: 40, Basis: FromCluster, Samples: 10}},
	{name: "unknown queue: the cluster's", obs: seq("b", ones(6, 40)...), queue: "zzz",
		want: Estimate{Seconds: 40, Basis: FromCluster, Samples: 6}},
	{name: "too few anywhere: the default", obs: seq("a", 1, 1, 1, 1), queue: "a",
		want: Estimate{Seconds: DefaultSeconds, Basis: FromDefault}},
	{name: "MinSamples 1", cfg: Config{MinSamples: 1}, obs: seq("a", 33), queue: "a",
		want: Estimate{Seconds: 33, Basis: FromQueue, Samples: 1}},
	{name: "window: the oldest leave", cfg: Config{Window: 5}, obs: seq("a", 100, 100, 100, 100, 100, 9, 9, 9, 9, 9), queue: "a",
		want: Estimate{Seconds: 9, Basis: FromQueue, Samples: 5}},
	{name: "window: partly replaced", cfg: Config{Window: 5, Quantile: 1}, obs: seq("a", 9, 9, 60, 9, 9, 9, 9), queue: "a",
		want: Estimate{Seconds: 60, Basis: FromQueue, Samples: 5}},
	{name: "cluster window: the oldest leave", cfg: Config{ClusterWindow: 5},
		obs: append(seq("b", 50, 50, 50, 50, 50), seq("c", 7, 7, 7, 7, 7)...), queue: "a",
		want: Estimate{Seconds: 7, Basis: FromCluster, Samples: 5}},
	{name: "running 55 s: the quantile of the longer ones", obs: seq("a", tens...), queue: "a", ranFor: 55,
		want: Estimate{Seconds: 103, Basis: FromQueue, Samples: 5}},
	{name: "running longer than all but one: twice its run", cfg: Config{Default: 60}, obs: seq("a", tens...), queue: "a", ranFor: 95,
		want: Estimate{Seconds: 190, Basis: Outran}},
	{name: "outran the learned ones: twice its run, not the default", obs: seq("a", tens...), queue: "a", ranFor: 95,
		want: Estimate{Seconds: 190, Basis: Outran}},
	{name: "outran too few learned: the default", obs: seq("a", 10, 20, 30, 40), queue: "a", ranFor: 95,
		want: Estimate{Seconds: DefaultSeconds, Basis: FromDefault}},
	{name: "running longer than the estimate: at least a second more", cfg: Config{MinSamples: 1},
		obs: seq("a", 3000), queue: "a", ranFor: 3000,
		want: Estimate{Seconds: 3071, Basis: FromQueue, Samples: 1}},
	{name: "observations are clamped", cfg: Config{Quantile: 1}, obs: seq("a", -5, 0, math.MaxInt64, 1, 1), queue: "a",
		want: Estimate{Seconds: MaxSeconds, Basis: FromQueue, Samples: 5}},
}

func TestEstimator(t *testing.T) {
	for _, tc := range estimateCases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEstimator(tc.cfg)
			for _, o := range tc.obs {
				e.Observe(o.queue, o.s)
			}
			if got := e.Estimate(tc.queue, tc.ranFor); got != tc.want {
				t.Errorf("Estimate(%q, %d) = %+v, want %+v", tc.queue, tc.ranFor, got, tc.want)
			}
		})
	}
}

func TestEstimatorForget(t *testing.T) {
	e := NewEstimator(Config{})
	for range 10 {
		e.Observe("a", 30)
	}
	if e.Samples("a") != 10 || e.Estimate("a", 0).Basis != FromQueue {
		t.Fatalf("before Forget: %d samples, %+v", e.Samples("a"), e.Estimate("a", 0))
	}
	e.Forget("a")
	// The queue's window is gone; the cluster still remembers its jobs.
	if got := e.Estimate("a", 0); e.Samples("a") != 0 || got != (Estimate{Seconds: 30, Basis: FromCluster, Samples: 10}) {
		t.Errorf("after Forget: %d samples, %+v", e.Samples("a"), got)
	}
	if c := e.Config(); c.Window != DefaultWindow || c.Quantile != DefaultQuantile {
		t.Errorf("Config() = %+v", c)
	}
}

// TestEstimatorAgainstSorting checks the tree against the definition: the
// nearest-rank quantile of a sorted copy of the window, among the samples
// whose bin is not below ranFor's, answered as its bin's upper edge.
func TestEstimatorAgainstSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	for _, q := range []float64{0.5, 0.9, 0.99, 1} {
		cfg := Config{Window: 37, ClusterWindow: 1 << 20, Quantile: q, MinSamples: 1, Default: 1}
		e := NewEstimator(cfg)
		var window []int64
		for i := range 3000 {
			v := int64(math.Exp(rng.Float64() * 16)) // 1 s to ~100 h, log-uniform
			e.Observe("a", v)
			if window = append(window, v); len(window) > cfg.Window {
				window = window[1:]
			}
			ranFor := int64(0)
			if i%3 == 0 {
				ranFor = window[rng.IntN(len(window))]
			}
			want := sortedQuantile(window, ranFor, q)
			if got := e.Estimate("a", ranFor); got.Seconds != want {
				t.Fatalf("q %.2f, step %d, ranFor %d: got %+v, want %d (window %v)", q, i, ranFor, got, want, window)
			}
		}
	}
}

func sortedQuantile(window []int64, ranFor int64, q float64) int64 {
	var m []int64
	for _, v := range window {
		if bin(v) >= bin(ranFor) {
			m = append(m, v)
		}
	}
	slices.Sort(m)
	k := max(int(math.Ceil(q*float64(len(m))-1e-9)), 1)
	return max(upper(bin(m[k-1])), ranFor+1)
}

// BenchmarkEstimator is one finished job observed and one estimate asked,
// over 100 queues, as the cache would on a pod's end and in a pass.
func BenchmarkEstimator(b *testing.B) {
	e := NewEstimator(Config{})
	queues := make([]string, 100)
	for i := range queues {
		queues[i] = "queue-" + strconv.Itoa(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 4096)
	for i := range vals {
		vals[i] = int64(math.Exp(rng.Float64() * 12))
	}
	for i := range 100_000 { // warm: every window full
		e.Observe(queues[i%len(queues)], vals[i%len(vals)])
	}
	b.ReportAllocs()
	var sink int64
	for i := 0; b.Loop(); i++ {
		q := queues[i%len(queues)]
		e.Observe(q, vals[i%len(vals)])
		sink += e.Estimate(q, vals[(i+7)%len(vals)]/2).Seconds
	}
	_ = sink
}
