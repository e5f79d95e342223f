package trace

import (
	"math"
	"math/rand/v2"
	"time"
)

// limitClass is one kind of declared limit: the share of all jobs that
// declare it and the factor over the actual run time, uniform in (lo, hi]
// (a single value when lo == hi; no limit when hi == 0).
type limitClass struct {
	p, lo, hi float64
}

// limitClasses is how users write run-time limits, as shares of all jobs:
//
//   - 15% declare no limit;
//   - 10% declare exactly the run time (1x: a rerun of a job they timed);
//   - 60% declare a factor uniform in (1.5, 3] (a comfortable margin);
//   - 10% declare a factor uniform in (3, 6] (a cautious one);
//   - 5% declare 10x (a round guess far above the need).
//
// Skewed so that most limits are usable but loose: a backfill planner that
// trusts them wastes room on the cautious ones and must not count on the
// unlimited ones ending at all.
var limitClasses = []limitClass{
	{p: 0.15},
	{p: 0.10, lo: 1, hi: 1},
	{p: 0.60, lo: 1.5, hi: 3},
	{p: 0.10, lo: 3, hi: 6},
	{p: 0.05, lo: 10, hi: 10},
}

// limitStreamKey separates the limits' random stream from the jobs': the
// limits were added after traces had been published, and drawing them from
// the jobs' stream would have changed every later draw, so every job, of
// every seed.
const limitStreamKey = 0x6a09e667f3bcc908

// assignLimits sets each job's Limit, in ID order, from a stream of its own
// derived from seed.
func assignLimits(jobs []Job, seed uint64) {
	rng := rand.New(rand.NewPCG(seed^limitStreamKey, seed^0xbb67ae8584caa73b))
	for i := range jobs {
		jobs[i].Limit = declaredLimit(rng, jobs[i].Run)
	}
}

// declaredLimit draws one job's limit for a job that runs run (whole
// seconds). It always makes two draws, so that one job's class never shifts
// the next job's draws. The limit is rounded up to a whole second, as users
// write it, which also keeps it at or above the factor it was drawn with.
func declaredLimit(rng *rand.Rand, run time.Duration) time.Duration {
	x, u := rng.Float64(), rng.Float64()
	c := limitClasses[len(limitClasses)-1]
	for _, lc := range limitClasses {
		if x < lc.p {
			c = lc
			break
		}
		x -= lc.p
	}
	if c.hi == 0 {
		return 0
	}
	// hi - width*u, u in [0, 1): (lo, hi], and exactly hi when lo == hi.
	f := c.hi - (c.hi-c.lo)*u
	return time.Duration(math.Ceil(run.Seconds()*f)) * time.Second
}
