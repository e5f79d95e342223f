// Package trace generates the seeded synthetic job trace of the scheduling
// quality benchmark (docs/quality.md): tenants with weighted queues,
// heavy-tailed run times, gang sizes from 1 to 64 with most jobs small but
// most CPU time in large gangs, and arrivals in bursts that offer more work
// than the cluster can run for the first part of the trace, then stop so
// that the cluster drains. Jobs declare run-time limits the way users
// write them: most a loose multiple of the actual run time, some exact,
// some far above it, and some none at all (Job.Limit).
//
// It is pure Go and knows nothing of Kubernetes: the runner turns each Job
// into a PodGroup and pods. Times are trace times; the runner compresses
// them (Params.Compression is recorded here only so that a trace describes
// itself).
package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Queue is one tenant's queue.
type Queue struct {
	// Name is the queue's (and the tenant namespace's) name.
	Name string
	// Weight is the queue's fair-share weight, 1-4.
	Weight int32
	// GuaranteeShare is the queue's guaranteed fraction of the cluster's
	// CPU (0: none); Params.GuaranteeCPU turns it into millicores.
	GuaranteeShare float64
	// Reclaimable false: what the queue holds above its deserved share is
	// never taken back.
	Reclaimable bool
	// Mix is the fraction of jobs submitted to this queue.
	Mix float64
}

// Job is one submission: Size pods of MemberCPU millicores each that run
// for Run once all of them run (a gang's work progresses only when every
// member is up; a job of Size 1 is a plain pod).
type Job struct {
	// ID numbers jobs in arrival order from 0.
	ID int
	// Queue is the tenant's queue.
	Queue string
	// Arrival is when the job is submitted, from the trace's start.
	Arrival time.Duration
	// Size is the number of pods, and the gang's minimum.
	Size int
	// MemberCPU is each pod's CPU request in millicores.
	MemberCPU int64
	// Run is how long the job runs once all its pods do.
	Run time.Duration
	// Limit is the run-time limit the job's user declares, in whole
	// seconds, at or above Run; 0: none. It is a factor over Run drawn from
	// limitClasses (15% none, 10% exactly Run, 60% in (1.5, 3]x, 10% in
	// (3, 6]x, 5% 10x), from a random stream apart from the other fields',
	// so that a seed's jobs are otherwise those it gave before limits were
	// added. Omitted from JSON when 0, so that a trace written without
	// limits reads back as one whose jobs declare none.
	Limit time.Duration `json:",omitempty"`
}

// Name is the job's name, the PodGroup's and its pods' prefix.
func (j Job) Name() string { return fmt.Sprintf("job-%04d", j.ID) }

// CPUSeconds is the job's work: its CPU request times its run time.
func (j Job) CPUSeconds() float64 {
	return float64(j.Size) * float64(j.MemberCPU) / 1000 * j.Run.Seconds()
}

// SizeClass names the job's gang-size class for the report.
func (j Job) SizeClass() string { return SizeClassOf(j.Size) }

// SizeClasses are the report's gang-size classes, smallest first.
var SizeClasses = []string{"1", "2-4", "8-16", "32-64"}

// SizeClassOf is the class of a job of size n.
func SizeClassOf(n int) string {
	switch {
	case n <= 1:
		return "1"
	case n <= 4:
		return "2-4"
	case n <= 16:
		return "8-16"
	default:
		return "32-64"
	}
}

// Params shape a trace. Durations are trace time.
type Params struct {
	// Seed makes the trace reproducible: the same Params give the same jobs.
	Seed uint64
	// Nodes and NodeCPU (millicores) give the cluster's capacity, which the
	// offered load is measured against.
	Nodes   int
	NodeCPU int64
	// ArrivalPhase is how long jobs arrive; after it the cluster drains.
	ArrivalPhase time.Duration
	// Horizon is the trace's nominal length (arrivals plus drain).
	Horizon time.Duration
	// Overload is the work offered during ArrivalPhase as a multiple of
	// what the cluster can run in that time (capacity x ArrivalPhase).
	Overload float64
	// Run times are lognormal with median RunMedian and log-deviation
	// RunSigma, clamped to [RunMin, RunMax].
	RunMedian, RunMin, RunMax time.Duration
	RunSigma                  float64
	// Arrivals come in bursts: burst starts are a Poisson process over the
	// arrival phase with MeanBurstJobs jobs per burst on average, each job
	// arriving uniformly within BurstSpread of its burst's start.
	MeanBurstJobs float64
	BurstSpread   time.Duration
	// Queues are the tenants.
	Queues []Queue
}

// sizeWeights is the gang-size distribution: most jobs are single pods or
// small gangs, but the few 16-64-member gangs hold most of the CPU time, the
// shape published GPU-cluster traces (Philly, Helios, Alibaba PAI) show.
var sizeWeights = []struct {
	size int
	p    float64
}{{1, 0.45}, {2, 0.15}, {4, 0.12}, {8, 0.10}, {16, 0.08}, {32, 0.06}, {64, 0.04}}

// DefaultParams are the benchmark's: 40 nodes of 8 cores, 6 minutes of
// arrivals offering 1.6x capacity, 15 minutes of trace.
func DefaultParams(seed uint64) Params {
	return Params{
		Seed:          seed,
		Nodes:         40,
		NodeCPU:       8000,
		ArrivalPhase:  6 * time.Minute,
		Horizon:       15 * time.Minute,
		Overload:      1.6,
		RunMedian:     40 * time.Second,
		RunSigma:      1.0,
		RunMin:        15 * time.Second,
		RunMax:        6 * time.Minute,
		MeanBurstJobs: 6,
		BurstSpread:   5 * time.Second,
		Queues: []Queue{
			// The lightest queue is guaranteed more than its weight would
			// give it (a fifth of the cluster against a tenth).
			{Name: "team-a", Weight: 1, GuaranteeShare: 0.2, Reclaimable: true, Mix: 0.3},
			// What this queue holds above its share stays with it.
			{Name: "team-b", Weight: 2, Reclaimable: false, Mix: 0.3},
			{Name: "team-c", Weight: 3, Reclaimable: true, Mix: 0.2},
			{Name: "team-d", Weight: 4, Reclaimable: true, Mix: 0.2},
		},
	}
}

// CapacityCPU is the cluster's CPU in millicores.
func (p Params) CapacityCPU() int64 { return int64(p.Nodes) * p.NodeCPU }

// GuaranteeCPU is q's guarantee in millicores, whole cores.
func (p Params) GuaranteeCPU(q Queue) int64 {
	return int64(q.GuaranteeShare*float64(p.CapacityCPU())) / 1000 * 1000
}

// Trace is a generated trace.
type Trace struct {
	Params Params
	// Jobs in arrival order.
	Jobs []Job
}

// Generate draws the trace Params describe. Jobs are drawn until their work
// reaches Overload x capacity x ArrivalPhase; then their arrival times are
// placed in bursts over the arrival phase. Limits come last, from their own
// stream.
func Generate(p Params) Trace {
	rng := rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))
	target := p.Overload * float64(p.CapacityCPU()) / 1000 * p.ArrivalPhase.Seconds()
	// No job may need more than half the cluster: a trace of jobs that
	// cannot fit measures nothing but refusals.
	maxCPU := p.CapacityCPU() / 2
	var jobs []Job
	work := 0.0
	for work < target {
		j := Job{Queue: pickQueue(rng, p.Queues), Size: pickSize(rng), Run: p.runTime(rng)}
		j.MemberCPU = memberCPU(rng, j.Size)
		if int64(j.Size)*j.MemberCPU > maxCPU {
			// Whole cores, at least one; then fewer members if need be.
			j.MemberCPU = max(1000, maxCPU/int64(j.Size)/1000*1000)
			j.Size = min(j.Size, int(maxCPU/j.MemberCPU))
		}
		jobs = append(jobs, j)
		work += j.CPUSeconds()
	}
	// Bursts: a Poisson process conditioned on its count has uniformly
	// scattered points, so the burst starts are sorted uniform draws.
	bursts := max(1, int(math.Round(float64(len(jobs))/p.MeanBurstJobs)))
	starts := make([]time.Duration, bursts)
	span := p.ArrivalPhase - p.BurstSpread
	for i := range starts {
		starts[i] = time.Duration(rng.Int64N(int64(span)))
	}
	for i := range jobs {
		b := starts[rng.IntN(bursts)]
		jobs[i].Arrival = (b + time.Duration(rng.Int64N(int64(p.BurstSpread)))).Truncate(time.Millisecond)
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return int(a.Arrival - b.Arrival) })
	for i := range jobs {
		jobs[i].ID = i
	}
	assignLimits(jobs, p.Seed)
	return Trace{Params: p, Jobs: jobs}
}

func pickQueue(rng *rand.Rand, qs []Queue) string {
	x := rng.Float64()
	for _, q := range qs {
		if x < q.Mix {
			return q.Name
		}
		x -= q.Mix
	}
	return qs[len(qs)-1].Name
}

func pickSize(rng *rand.Rand) int {
	x := rng.Float64()
	for _, s := range sizeWeights {
		if x < s.p {
			return s.size
		}
		x -= s.p
	}
	return sizeWeights[len(sizeWeights)-1].size
}

// memberCPU is 1, 2 or 4 cores for single pods and small gangs, 2 cores for
// gangs of 16 and more (a 64 x 4-core gang would need 80% of the cluster).
func memberCPU(rng *rand.Rand, size int) int64 {
	if size >= 16 {
		return 2000
	}
	return []int64{1000, 2000, 4000}[rng.IntN(3)]
}

func (p Params) runTime(rng *rand.Rand) time.Duration {
	d := time.Duration(float64(p.RunMedian) * math.Exp(p.RunSigma*rng.NormFloat64()))
	return min(max(d, p.RunMin), p.RunMax).Truncate(time.Second)
}

// Stats summarize a trace for its table test and the report.
type Stats struct {
	Jobs, Pods int
	// OfferedLoad is the work arriving during the arrival phase over what
	// the cluster can run in that time.
	OfferedLoad float64
	// LargeGangWorkFraction is the fraction of CPU time in gangs of 16 or more.
	LargeGangWorkFraction float64
	// SmallJobFraction is the fraction of jobs of at most 4 pods.
	SmallJobFraction float64
	// MaxRun is the longest run time.
	MaxRun time.Duration
	// IdealDrain is when an ideal scheduler (every core busy from the first
	// arrival) would finish all work: total work / capacity.
	IdealDrain time.Duration
}

// Stats computes the trace's Stats.
func (t Trace) Stats() Stats {
	var s Stats
	var total, large, arriving float64
	for _, j := range t.Jobs {
		s.Jobs++
		s.Pods += j.Size
		w := j.CPUSeconds()
		total += w
		if j.Size >= 16 {
			large += w
		}
		if j.Arrival < t.Params.ArrivalPhase {
			arriving += w
		}
		if j.Size <= 4 {
			s.SmallJobFraction++
		}
		s.MaxRun = max(s.MaxRun, j.Run)
	}
	capSec := float64(t.Params.CapacityCPU()) / 1000
	if s.Jobs > 0 {
		s.SmallJobFraction /= float64(s.Jobs)
		s.LargeGangWorkFraction = large / total
		s.OfferedLoad = arriving / (capSec * t.Params.ArrivalPhase.Seconds())
		s.IdealDrain = time.Duration(total / capSec * float64(time.Second))
	}
	return s
}
