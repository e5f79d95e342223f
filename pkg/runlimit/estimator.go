package runlimit

import (
	"math"
	"math/bits"
)

// Defaults of Config's zero fields.
const (
	// DefaultWindow: a queue's last 64 finished jobs are recent enough to
	// follow a change of workload within a day of a busy queue, and enough
	// for a 0.9 quantile to lie below the largest few.
	DefaultWindow = 64
	// DefaultClusterWindow: the cluster-wide fallback remembers more, as
	// it mixes every queue's jobs.
	DefaultClusterWindow = 512
	// DefaultQuantile: most jobs end within the estimate. An estimate too
	// short breaks the ETAs shown and plans reservations too early; one
	// too long only shows a later ETA and plans some backfill that a
	// shorter one would not have.
	DefaultQuantile = 0.9
	// DefaultMinSamples: fewer samples than this are not a quantile yet,
	// and the next fallback answers.
	DefaultMinSamples = 5
	// DefaultSeconds is the estimate when nothing has been learned: an
	// hour, a common order of a batch job's run.
	DefaultSeconds = 3600
)

// maxWindow keeps a window's counts within the tree's uint16.
const maxWindow = math.MaxUint16

// Config tunes an Estimator. Zero fields take the defaults above.
type Config struct {
	// Window is how many of a queue's most recent run times are kept.
	Window int
	// ClusterWindow is how many of the cluster's are kept (every queue's).
	ClusterWindow int
	// Quantile in (0, 1] is the rank of the estimate among the samples.
	Quantile float64
	// MinSamples is the fewest samples a quantile is taken from.
	MinSamples int
	// Default is the estimate, in seconds, when no window has MinSamples.
	Default int64
}

// withDefaults fills the zero fields and clamps the rest into range.
func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.ClusterWindow <= 0 {
		c.ClusterWindow = DefaultClusterWindow
	}
	c.Window, c.ClusterWindow = min(c.Window, maxWindow), min(c.ClusterWindow, maxWindow)
	if !(c.Quantile > 0 && c.Quantile <= 1) { // NaN too
		c.Quantile = DefaultQuantile
	}
	if c.MinSamples <= 0 {
		c.MinSamples = DefaultMinSamples
	}
	if c.Default <= 0 {
		c.Default = DefaultSeconds
	}
	c.Default = min(c.Default, MaxSeconds)
	return c
}

// Basis says what an Estimate was learned from.
type Basis uint8

const (
	// FromDefault: nothing learned yet, no window with enough samples
	// (Config.Default, or twice the time already run, whichever is
	// longer).
	FromDefault Basis = iota
	// FromQueue: the queue's own recent jobs.
	FromQueue
	// FromCluster: every queue's recent jobs.
	FromCluster
	// Outran: the cluster's window has enough samples, but too few of
	// them are longer than the job has already run: twice that time.
	Outran
)

// String names the basis as an ETA's explanation shows it.
func (b Basis) String() string {
	switch b {
	case FromQueue:
		return "queue"
	case FromCluster:
		return "cluster"
	case Outran:
		return "outran"
	}
	return "default"
}

// Estimate is how long a job without a limit is expected to run in all,
// counted from its start.
type Estimate struct {
	// Seconds is the expected total run time, more than the time the job
	// has already run.
	Seconds int64
	// Basis is where it was learned.
	Basis Basis
	// Samples is how many run times it was taken from (0 for FromDefault).
	Samples int
}

// Estimator learns the run times of finished jobs, per queue, and answers
// how long a job of a queue without a declared limit is expected to run.
//
// Method. Each queue keeps the run times of its last Window finished jobs,
// and the cluster its last ClusterWindow (all queues'). The estimate for a
// job that has already run r seconds (0 for one not started) is the
// Quantile of the queue's samples that may be longer than r (those not in
// a bin below r's), by the nearest-rank rule (the ceil(Quantile x m)-th
// smallest of those m samples), rounded up to its bin's upper edge and to
// at least r+1. When fewer than MinSamples
// qualify, the cluster's samples answer the same way. Failing those, a
// job that has outrun what the cluster learned (it holds MinSamples run
// times, too few of them longer than r) is expected to run about as long
// again, 2r (Outran); one of a cluster that has learned nothing yet gets
// max(Default, 2r). Default is a guess with nothing behind it, too long
// for a cluster of short jobs: it is not used once run times are known.
//
// Cost. Run times are binned (bin): exact from 1 to 64 s, then 16 bins per
// doubling up to MaxSeconds, 464 in all, each at most 6.25% wide. Counts
// per bin are a Fenwick tree, so Observe (one insertion, one eviction per
// window) and Estimate (a prefix count and a descent) are O(log bins);
// each queue holds 1 KiB of tree and 2 bytes per window slot, allocated on
// its first observation and dropped by Forget. Only integer arithmetic
// runs after NewEstimator (the quantile becomes millionths), so equal
// observation sequences give equal answers on every platform.
//
// Not safe for concurrent use: the caller serializes (the cache, under its
// lock).
type Estimator struct {
	cfg     Config
	qm      int64 // Quantile in millionths
	cluster *window
	queues  map[string]*window
}

// NewEstimator returns an Estimator that has learned nothing.
func NewEstimator(cfg Config) *Estimator {
	cfg = cfg.withDefaults()
	return &Estimator{
		cfg:     cfg,
		qm:      max(int64(math.Round(cfg.Quantile*1e6)), 1),
		cluster: newWindow(cfg.ClusterWindow),
		queues:  map[string]*window{},
	}
}

// Config returns the configuration in use, defaults filled in.
func (e *Estimator) Config() Config { return e.cfg }

// Observe learns that a job of queue ran for seconds: a pod from its start
// to its end, or a gang from its first member's start to its last
// member's end (how long it held room, which is what Estimate answers).
// Every finished job counts, failed or killed ones and ones with a limit
// too: they are the queue's real run times. Values are clamped to [1,
// MaxSeconds].
func (e *Estimator) Observe(queue string, seconds int64) {
	b := bin(seconds)
	w := e.queues[queue]
	if w == nil {
		w = newWindow(e.cfg.Window)
		e.queues[queue] = w
	}
	w.push(b)
	e.cluster.push(b)
}

// Estimate answers how long a job of queue that has run ranFor seconds
// (0 when it has not started) runs in all, as the Estimator's doc says.
func (e *Estimator) Estimate(queue string, ranFor int64) Estimate {
	ranFor = min(max(ranFor, 0), MaxSeconds)
	if w := e.queues[queue]; w != nil {
		if s, m, ok := w.quantile(ranFor, e.qm, e.cfg.MinSamples); ok {
			return Estimate{Seconds: s, Basis: FromQueue, Samples: m}
		}
	}
	if s, m, ok := e.cluster.quantile(ranFor, e.qm, e.cfg.MinSamples); ok {
		return Estimate{Seconds: s, Basis: FromCluster, Samples: m}
	}
	if e.cluster.n >= e.cfg.MinSamples {
		return Estimate{Seconds: max(2*ranFor, ranFor+1), Basis: Outran}
	}
	return Estimate{Seconds: max(e.cfg.Default, 2*ranFor, ranFor+1), Basis: FromDefault}
}

// Forget drops a queue's samples (the Queue was deleted), so memory stays
// bounded by the queues that exist; the cluster's window keeps them.
func (e *Estimator) Forget(queue string) { delete(e.queues, queue) }

// Samples returns how many run times the queue's window holds now.
func (e *Estimator) Samples(queue string) int {
	if w := e.queues[queue]; w != nil {
		return w.n
	}
	return 0
}

// Binning: values 1..linear are their own bins; above, each doubling
// [2^o, 2^(o+1)) for o in [6, 30] splits into perOctave equal bins.
const (
	linear    = 64
	linearLog = 6 // log2(linear)
	perOctave = 16
	octLog    = 4 // log2(perOctave)
	numBins   = linear + (31-linearLog)*perOctave
	treeSize  = 512 // a power of two >= numBins, for the Fenwick descent
)

// bin is the bin of a run time, clamped to [1, MaxSeconds].
func bin(v int64) int {
	v = min(max(v, 1), MaxSeconds)
	if v <= linear {
		return int(v) - 1
	}
	o := bits.Len64(uint64(v)) - 1 // 2^o <= v < 2^(o+1), o >= linearLog
	sub := (v - 1<<o) >> (o - octLog)
	return linear + (o-linearLog)*perOctave + int(sub)
}

// upper is the largest run time in bin b: the estimate a bin answers.
func upper(b int) int64 {
	if b < linear {
		return int64(b) + 1
	}
	o, sub := linearLog+(b-linear)/perOctave, int64((b-linear)%perOctave)
	return 1<<o + (sub+1)<<(o-octLog) - 1
}
