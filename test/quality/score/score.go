// Package score turns what one run of the quality benchmark recorded (job
// starts and ends, per-queue allocation samples, evictions, partial gangs)
// into the report's metrics: utilization, each queue's allocated vs deserved
// share, job waits by gang-size class, makespan, completion times and
// deadlocks. It is pure Go, so every profile is scored by the same code.
//
// Deserved shares are computed here for every profile, with pkg/queue's
// Divide (the water-filling Caldera's own cache runs) on the demand the run
// showed at each sample: what each queue held plus what its unbound pods
// asked for. The default and upstream-gang profiles have no notion of a
// queue, so their shares are measured against the same rule; Caldera is
// judged by it too rather than by its own status, so that one ruler measures
// all three.
package score

import (
	"math"
	"slices"

	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/test/quality/trace"
)

// Job is what a run recorded about one trace job. Times are trace seconds
// from the trace's start; -1 means never.
type Job struct {
	ID      int
	Queue   string
	Size    int
	Arrival float64
	// Start is when its last pod was bound (the job ran from then on).
	Start float64
	// End is when it finished (every pod Succeeded).
	End float64
	// Evicted counts its pods deleted by the scheduler.
	Evicted int
	// PartialSeconds is the longest time some but not all of its pods
	// were bound (0 for single pods).
	PartialSeconds float64
	// FirstETA is the first expected start the scheduler gave it while
	// it waited, in trace seconds: a gang's on its PodGroup
	// (qapi.ExpectedStartAnnotation), a single pod's in its NotAdmitted
	// verdict ("reserved from T"), whole wall seconds either way; nil if
	// it never had one (other profiles).
	FirstETA *float64 `json:",omitempty"`
	// PredecessorsLimited: every job holding room (a pod bound and not
	// finished) when the first ETA was seen declared a run-time limit, so
	// that the plan behind the ETA knew when each of them ends. Only with
	// FirstETA.
	PredecessorsLimited bool `json:",omitempty"`
	// FirstEstimate is the first estimated start the scheduler gave it
	// (a gang's PodGroup's qapi.EstimatedStartAnnotation: it waited for
	// jobs without a limit), in trace seconds; nil if none.
	FirstEstimate *float64 `json:",omitempty"`
	// Verdicts, for a job given an ETA, are the admission Events about
	// it in order (Admitted, NotAdmitted, OverranRunLimit): why its start
	// moved from its first ETA.
	Verdicts []Verdict `json:",omitempty"`
}

// Verdict is one admission Event about a job: when (trace seconds), its
// reason and its note.
type Verdict struct {
	T            float64
	Reason, Note string
}

// Sample is the cluster's state at one instant of a run.
type Sample struct {
	// T is trace seconds from the start.
	T float64
	// Allocated is the CPU (millicores) each queue's bound, unfinished
	// pods request.
	Allocated map[string]int64
	// Pending is the CPU each queue's existing, unbound pods request.
	Pending map[string]int64
	// Partial is the CPU held by bound pods of gangs not yet complete.
	Partial int64
}

// Run is one profile's record.
type Run struct {
	Profile string
	// Compression is trace time over wall time.
	Compression float64
	// CapacityCPU and NodeCPU are in millicores.
	CapacityCPU, NodeCPU int64
	Jobs                 []Job
	Samples              []Sample
	// PartialNodeSeconds is the integral, over trace time, of the nodes'
	// worth of CPU held by bound pods of incomplete gangs.
	PartialNodeSeconds float64
	// Evictions counts pods deleted by the scheduler.
	Evictions int
	// EvictionLog says when each eviction happened and whose pod it took.
	EvictionLog []Eviction `json:",omitempty"`
	// End is when the run stopped (all jobs finished, or the drain ended).
	End float64
	// Error, if set, says why the run stopped early.
	Error string `json:",omitempty"`
}

// Eviction is one pod deleted by the scheduler.
type Eviction struct {
	// T is trace seconds from the start.
	T float64
	// Queue is the evicted pod's queue.
	Queue string
	// CPU is the pod's request in millicores; Ran is how long it had been
	// bound, in trace seconds (0 if it never was): the work it lost.
	CPU int64
	Ran float64
	// Before is the cluster's state just before the eviction, as the run
	// saw it (pods bound and pending, this one still bound).
	Before Sample
	// Pod is the evicted pod's name, Job its trace job's ID and JobSize
	// that job's size.
	Pod     string `json:",omitempty"`
	Job     int
	JobSize int `json:",omitempty"`
	// Limit is the pod's declared run-time limit in trace seconds (the
	// annotation's whole wall seconds times the compression); 0: none.
	Limit float64 `json:",omitempty"`
	// Reason is the scheduler's Event on the evicted pod (CalderaReclaim
	// writes ReasonReclaimed or ReasonPreempted, admission ReasonOverran);
	// "" when none was found. Preemptor is what it made room for, from the
	// Event: a pod (namespace/name), or for ReasonOverran the reserved
	// group (its queue key, "pg:namespace/name"); PreemptorJob is its
	// trace job (-1: unknown).
	Reason       string `json:",omitempty"`
	Preemptor    string `json:",omitempty"`
	PreemptorJob int
	// Disruption is the pod's DisruptionTarget condition as it was
	// deleted ("reason: message"), the scheduler's mark on its victims.
	Disruption string `json:",omitempty"`
	// Lent: the last admission of the pod's group (or of the pod, a
	// group of one) before the eviction was on lent room (its Admitted
	// Event says so).
	Lent bool `json:",omitempty"`
	// Backfilled: the pod was bound, ahead of a reservation of another
	// group, on a node that reservation names (the reservations are
	// those the NotAdmitted Events name: "reserved from T on nodes"): it
	// started by backfill on a reserved node (in the reserved room or
	// beside it: the Events do not say how much of the node is
	// reserved). ForReservation: the eviction made room for that
	// reservation's group: the backfilled pod was still there when the
	// group came to start.
	Backfilled     bool `json:",omitempty"`
	ForReservation bool `json:",omitempty"`
	// Done: the pod's job had ended its run and was being completed; the
	// eviction lost no work (Result.EvictedWork leaves it out).
	Done bool `json:",omitempty"`
}

// Event reasons the scheduler writes on its victims: CalderaReclaim's
// (pkg/plugins/reclaim) across queues and within a queue, and
// admission's (pkg/cache) for a pod past its annotated run-time limit in
// the room of a reservation that has come due.
const (
	ReasonReclaimed = "Reclaimed"
	ReasonPreempted = "Preempted"
	ReasonOverran   = "OverranRunLimit"
)

// Eviction causes, as the report counts them (Eviction.Cause).
const (
	// CauseLending: the victim ran on lent room, which reclaim takes back.
	CauseLending = "lending"
	// CauseBackfill: the victim started by backfill on a node reserved
	// for a group, and was evicted for that group: past its limit
	// (ReasonOverran), or reclaimed for it.
	CauseBackfill = "backfill-overrun"
	// CauseOverrun: the victim, not backfilled, ran past its annotated
	// limit into a reservation that came due (ReasonOverran).
	CauseOverrun = "limit-overrun"
	// CauseReclaim: reclaim took the victim from a queue above its
	// deserved share, on neither lent nor overrun backfill room.
	CauseReclaim = "reclaim"
	// CausePreemption: a higher-priority group of the victim's own queue.
	CausePreemption = "preemption"
	// CauseUnknown: no Event found and no other cause applies.
	CauseUnknown = "unknown"
)

// Causes are the eviction causes in the report's order.
var Causes = []string{CauseLending, CauseBackfill, CauseOverrun, CauseReclaim, CausePreemption, CauseUnknown}

// Cause classifies e. Preemption within a queue is a matter of priority,
// whatever room the victim ran on, and an overrun eviction one of the
// victim's limit (backfill-overrun when it had started by backfill);
// otherwise lent room comes first (a loan is taken back by design), then
// backfill the reserved group took back, then plain reclaim.
func (e Eviction) Cause() string {
	switch {
	case e.Reason == ReasonPreempted:
		return CausePreemption
	case e.Reason == ReasonOverran && e.Backfilled:
		return CauseBackfill
	case e.Reason == ReasonOverran:
		return CauseOverrun
	case e.Lent:
		return CauseLending
	case e.Backfilled && e.ForReservation:
		return CauseBackfill
	case e.Reason == ReasonReclaimed:
		return CauseReclaim
	default:
		return CauseUnknown
	}
}

// Overran says whether the victim had run longer than its declared limit
// when it was evicted: the plan then counted its room as already back.
func (e Eviction) Overran() bool { return e.Limit > 0 && e.Ran > e.Limit }

// Waits are wait-time percentiles in trace seconds.
type Waits struct {
	Jobs          int
	P50, P95, P99 float64
	Max           float64
}

// QueueScore is one queue's share over the run.
type QueueScore struct {
	Name string
	// Deserved and Allocated are in cores, per sample (same index as
	// Result.T).
	Deserved, Allocated []float64
	// MeanAbsError is the mean |allocated - deserved| over contended
	// samples, in cores; MeanRelError the same over deserved.
	MeanAbsError, MeanRelError float64
}

// Result is one profile's scores.
type Result struct {
	Profile string
	// T, Utilization: per sample, trace seconds and allocated/capacity;
	// Useful is the same without partial gangs' CPU; Demand is allocated
	// plus pending over capacity (above 1: contended).
	T, Utilization, Useful, Demand []float64
	// ContendedUtilization is the mean Utilization over samples where demand
	// (allocated + pending) is at least the capacity; ContendedSamples counts them.
	ContendedUtilization, ContendedUseful float64
	ContendedSamples                      int
	Queues                                []QueueScore
	// Waits by size class (trace.SizeClasses) and over all jobs.
	ByClass map[string]Waits
	All     Waits
	// WaitsSorted are all jobs' waits, ascending (the CDF); a job that never
	// started counts with its wait until the end of the run.
	WaitsSorted []float64
	MaxWait     float64
	// NeverStarted counts jobs that never had all their pods bound.
	NeverStarted int
	// Makespan is the last job's end (0 when some never finished).
	Makespan float64
	// MeanJCT is the mean of end - arrival over finished jobs.
	MeanJCT float64
	// Finished and Unfinished count jobs; Unfinished are the deadlocked or
	// starved ones at the end of the drain.
	Finished, Unfinished int
	PartialNodeSeconds   float64
	MaxPartialSeconds    float64
	Evictions            int
	// EvictionsNotAboveShare counts evictions that took a pod from a queue
	// that, just before the eviction, held no more than its deserved share
	// (deserved by queue.Divide on that instant's demand): reclaim should
	// only take from queues above theirs, so these are evictions once
	// shares are at deserved.
	EvictionsNotAboveShare int
	// EvictedWork is the work the evicted pods lost, in core-seconds of
	// trace time (each pod's CPU times how long it had been bound, none
	// for a pod whose job's run had ended: Eviction.Done), and
	// EvictedFresh counts evictions of pods bound for less than
	// FreshSeconds: those cost a bind and an eviction, nearly no work.
	EvictedWork  float64
	EvictedFresh int
	// EvictionCauses counts evictions by Eviction.Cause (every cause in
	// Causes present, 0 included); EvictedBackfilled counts victims that
	// had started by backfill, whatever the cause, and EvictedOverran
	// those that had run past their declared limit.
	EvictionCauses    map[string]int
	EvictedBackfilled int
	EvictedOverran    int
	// ETA compares each job's start with the first expected start it was
	// given.
	ETA   ETAScore
	End   float64
	Error string `json:",omitempty"`
}

// Score computes a run's Result; queues are the trace's tenants.
func Score(run Run, queues []trace.Queue) Result {
	r := Result{
		Profile: run.Profile, PartialNodeSeconds: run.PartialNodeSeconds,
		Evictions: run.Evictions, End: run.End, Error: run.Error,
		ByClass: map[string]Waits{},
	}
	scoreSamples(&r, run, queues)
	scoreJobs(&r, run)
	scoreEvictions(&r, run, queues)
	r.ETA = ScoreETA(run.Jobs, run.End, run.Compression)
	return r
}

// ETAScore is how the starts of the jobs that were given an expected start
// compare with the first one they were given. Lateness is start - first
// ETA in trace seconds (negative: early); a job that never started counts
// with the run's end as its start, a lower bound.
type ETAScore struct {
	// ETAStats are over every job given an ETA.
	ETAStats
	// Limited are over the jobs whose every predecessor declared a limit
	// (Job.PredecessorsLimited): the ETAs the plan could keep.
	Limited ETAStats
	// Tolerance is one wall second in trace seconds (the annotation has
	// whole seconds): a job is on time when it started no later than its
	// first ETA + Tolerance (never one that never started).
	Tolerance float64
	// Lateness and LimitedLateness are the sorted latenesses (the CDFs).
	Lateness, LimitedLateness []float64 `json:",omitempty"`
	// Estimated are over the jobs given an estimated start, lateness
	// measured from the first one (EstimatedLateness, sorted).
	Estimated         ETAStats
	EstimatedLateness []float64 `json:",omitempty"`
}

// ETAStats summarize latenesses.
type ETAStats struct {
	// Jobs counts the jobs given an ETA; NeverStarted those of them that
	// never started.
	Jobs, NeverStarted int
	// Lateness percentiles (nearest rank) and maximum.
	P10, P50, P90, Max float64
	// OnTime counts the jobs on time, OnTimeShare is OnTime over Jobs.
	OnTime      int
	OnTimeShare float64
}

// ScoreETA scores jobs' starts against their first ETA; end is the run's
// end, compression its trace seconds per wall second.
func ScoreETA(jobs []Job, end, compression float64) ETAScore {
	s := ETAScore{Tolerance: compression}
	for _, j := range jobs {
		start := j.Start
		if start < 0 {
			start = end
		}
		if j.FirstEstimate != nil {
			l := start - *j.FirstEstimate
			s.EstimatedLateness = append(s.EstimatedLateness, l)
			s.Estimated.add(j.Start >= 0, l, s.Tolerance)
		}
		if j.FirstETA == nil {
			continue
		}
		l := start - *j.FirstETA
		s.Lateness = append(s.Lateness, l)
		s.ETAStats.add(j.Start >= 0, l, s.Tolerance)
		if j.PredecessorsLimited {
			s.LimitedLateness = append(s.LimitedLateness, l)
			s.Limited.add(j.Start >= 0, l, s.Tolerance)
		}
	}
	s.ETAStats.finish(s.Lateness)
	s.Limited.finish(s.LimitedLateness)
	s.Estimated.finish(s.EstimatedLateness)
	return s
}

func (s *ETAStats) add(started bool, lateness, tolerance float64) {
	s.Jobs++
	if !started {
		s.NeverStarted++
	} else if lateness <= tolerance {
		s.OnTime++
	}
}

// finish sorts late (every lateness added) and sets the percentiles.
func (s *ETAStats) finish(late []float64) {
	if s.Jobs == 0 {
		return
	}
	slices.Sort(late)
	s.P10, s.P50, s.P90 = Percentile(late, 10), Percentile(late, 50), Percentile(late, 90)
	s.Max = late[len(late)-1]
	s.OnTimeShare = float64(s.OnTime) / float64(s.Jobs)
}

func specsOf(queues []trace.Queue, capacity int64) []queue.Spec {
	p := trace.Params{Nodes: 1, NodeCPU: capacity}
	specs := make([]queue.Spec, 0, len(queues))
	for _, q := range queues {
		s := queue.Spec{Name: q.Name, Weight: q.Weight, Reclaimable: q.Reclaimable}
		if g := p.GuaranteeCPU(q); g > 0 {
			s.Guarantee = resources.List{resources.CPU: g}
		}
		specs = append(specs, s)
	}
	return specs
}

func scoreSamples(r *Result, run Run, queues []trace.Queue) {
	tree := queue.BuildTree(specsOf(queues, run.CapacityCPU))
	total := resources.List{resources.CPU: run.CapacityCPU}
	capacity := float64(run.CapacityCPU)
	r.Queues = make([]QueueScore, len(queues))
	errN := make([]int, len(queues))
	relN := make([]int, len(queues))
	var utilSum, usefulSum float64
	for _, s := range run.Samples {
		var alloc, demand int64
		for _, q := range queues {
			a, p := s.Allocated[q.Name], s.Pending[q.Name]
			alloc += a
			demand += a + p
		}
		shares := queue.Divide(tree, total, usageOf(s, queues))
		r.T = append(r.T, s.T)
		u := float64(alloc) / capacity
		useful := float64(alloc-s.Partial) / capacity
		r.Utilization = append(r.Utilization, u)
		r.Useful = append(r.Useful, useful)
		r.Demand = append(r.Demand, float64(demand)/capacity)
		contended := demand >= run.CapacityCPU
		if contended {
			r.ContendedSamples++
			utilSum += u
			usefulSum += useful
		}
		for i, q := range queues {
			d := float64(shares.Deserved(q.Name)[resources.CPU]) / 1000
			a := float64(s.Allocated[q.Name]) / 1000
			qs := &r.Queues[i]
			qs.Name = q.Name
			qs.Deserved = append(qs.Deserved, d)
			qs.Allocated = append(qs.Allocated, a)
			if contended {
				qs.MeanAbsError += math.Abs(a - d)
				errN[i]++
				if d > 0 {
					qs.MeanRelError += math.Abs(a-d) / d
					relN[i]++
				}
			}
		}
	}
	if r.ContendedSamples > 0 {
		r.ContendedUtilization = utilSum / float64(r.ContendedSamples)
		r.ContendedUseful = usefulSum / float64(r.ContendedSamples)
	}
	for i := range r.Queues {
		if errN[i] > 0 {
			r.Queues[i].MeanAbsError /= float64(errN[i])
		}
		if relN[i] > 0 {
			r.Queues[i].MeanRelError /= float64(relN[i])
		}
	}
}

func scoreJobs(r *Result, run Run) {
	byClass := map[string][]float64{}
	var jctSum float64
	last := 0.0
	for _, j := range run.Jobs {
		r.MaxPartialSeconds = max(r.MaxPartialSeconds, j.PartialSeconds)
		// A job that never started counts with its wait until the run's
		// end, a lower bound: leaving it out would reward a scheduler
		// for starving it.
		w := j.Start - j.Arrival
		if j.Start < 0 {
			w = run.End - j.Arrival
			r.NeverStarted++
		}
		r.MaxWait = max(r.MaxWait, w)
		r.WaitsSorted = append(r.WaitsSorted, w)
		c := trace.SizeClassOf(j.Size)
		byClass[c] = append(byClass[c], w)
		if j.End < 0 {
			r.Unfinished++
			continue
		}
		r.Finished++
		jctSum += j.End - j.Arrival
		last = max(last, j.End)
	}
	slices.Sort(r.WaitsSorted)
	r.All = waitsOf(r.WaitsSorted)
	for c, ws := range byClass {
		slices.Sort(ws)
		r.ByClass[c] = waitsOf(ws)
	}
	if r.Finished > 0 {
		r.MeanJCT = jctSum / float64(r.Finished)
	}
	if r.Unfinished == 0 {
		r.Makespan = last
	}
}

// waitsOf summarizes sorted waits.
func waitsOf(sorted []float64) Waits {
	if len(sorted) == 0 {
		return Waits{}
	}
	return Waits{
		Jobs: len(sorted),
		P50:  Percentile(sorted, 50), P95: Percentile(sorted, 95), P99: Percentile(sorted, 99),
		Max: sorted[len(sorted)-1],
	}
}

// Percentile is the nearest-rank p-th percentile of sorted values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// FreshSeconds is the trace time under which an evicted pod counts as
// fresh (Result.EvictedFresh): one sample interval at the default
// compression.
const FreshSeconds = 4.0

// scoreEvictions judges each logged eviction by its queue's allocated and
// deserved CPU just before it, counts them by cause and adds up the work
// evictions lost.
func scoreEvictions(r *Result, run Run, queues []trace.Queue) {
	tree := queue.BuildTree(specsOf(queues, run.CapacityCPU))
	total := resources.List{resources.CPU: run.CapacityCPU}
	r.EvictionCauses = make(map[string]int, len(Causes))
	for _, c := range Causes {
		r.EvictionCauses[c] = 0
	}
	for _, e := range run.EvictionLog {
		r.EvictionCauses[e.Cause()]++
		if e.Backfilled {
			r.EvictedBackfilled++
		}
		if e.Overran() {
			r.EvictedOverran++
		}
		shares := queue.Divide(tree, total, usageOf(e.Before, queues))
		if e.Before.Allocated[e.Queue] <= shares.Deserved(e.Queue)[resources.CPU] {
			r.EvictionsNotAboveShare++
		}
		if !e.Done {
			r.EvictedWork += float64(e.CPU) / 1000 * e.Ran
		}
		if e.Ran < FreshSeconds {
			r.EvictedFresh++
		}
	}
}

// usageOf is each queue's allocated and pending CPU in s, as Divide takes it.
func usageOf(s Sample, queues []trace.Queue) map[string]queue.Usage {
	usage := make(map[string]queue.Usage, len(queues))
	for _, q := range queues {
		usage[q.Name] = queue.Usage{
			Allocated: resources.List{resources.CPU: s.Allocated[q.Name]},
			Pending:   resources.List{resources.CPU: s.Pending[q.Name]},
		}
	}
	return usage
}
