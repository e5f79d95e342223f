package quality

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/caldera-sched/caldera/test/quality/score"
	"github.com/caldera-sched/caldera/test/quality/trace"
)

// Report is results.json: the trace and each profile's record and scores.
type Report struct {
	Started  time.Time
	Params   trace.Params
	Stats    trace.Stats
	Options  ReportOptions
	Runs     []score.Run
	Results  []score.Result
	Machine  string
	Duration string
}

// ReportOptions are the run's settings.
type ReportOptions struct {
	Compression                float64
	DrainEnd, Stall            string
	StarvationThresholdSeconds int
}

// machine describes the machine and its load when the run started.
func machine() string {
	model := "unknown cpu"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%d cores (%s), %s %s, load average at start %s", runtime.NumCPU(), model, runtime.GOOS, runtime.Version(), load)
}

// podCores is "one pod" in the share-error target: the largest pod of the
// trace (4 cores).
const podCores = 4.0

// markdown renders the report's tables.
func markdown(rep Report) string {
	var b strings.Builder
	p, s := rep.Params, rep.Stats
	fmt.Fprintf(&b, "# Quality benchmark results\n\nStarted %s, took %s. Machine: %s.\n\n", rep.Started.Format("2006-01-02 15:04 UTC"), rep.Duration, rep.Machine)
	fmt.Fprintf(&b, "Trace: seed %d, %d nodes x %d cores (%d cores), %d jobs / %d pods arriving over %v (offered load %.2fx capacity), "+
		"%.0f%% of jobs of <= 4 pods, %.0f%% of CPU time in gangs of 16+, longest run %v, ideal drain %v. "+
		"Compression %.0fx (trace seconds per wall second); times below are trace seconds.\n\n",
		p.Seed, p.Nodes, p.NodeCPU/1000, p.CapacityCPU()/1000, s.Jobs, s.Pods, p.ArrivalPhase, s.OfferedLoad,
		100*s.SmallJobFraction, 100*s.LargeGangWorkFraction, s.MaxRun, s.IdealDrain.Round(1e9), rep.Options.Compression)

	b.WriteString("| profile | util. while contended | useful util. | finished | unfinished | makespan s | mean JCT s | wait p50 | p95 | p99 | max wait s | partial-gang node-s | longest partial s | never started | evictions (fresh) | work evicted core-s | stopped because |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range rep.Results {
		mk := "-"
		if r.Makespan > 0 {
			mk = fmt.Sprintf("%.0f", r.Makespan)
		}
		why := rep.Runs[i].Error
		if why == "" {
			why = "all jobs finished"
		}
		fmt.Fprintf(&b, "| %s | %.1f%% | %.1f%% | %d | %d | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %d (%d) | %.0f | %s |\n",
			r.Profile, 100*r.ContendedUtilization, 100*r.ContendedUseful, r.Finished, r.Unfinished, mk, r.MeanJCT,
			r.All.P50, r.All.P95, r.All.P99, r.MaxWait, r.PartialNodeSeconds, r.MaxPartialSeconds, r.NeverStarted,
			r.Evictions, r.EvictedFresh, r.EvictedWork, why)
	}

	fmt.Fprintf(&b, "\nEvictions (fresh): pods the scheduler deleted, and of them those bound for less than %.0f trace seconds; "+
		"work evicted: their CPU times how long each had been bound, the work lost.\n", score.FreshSeconds)
	b.WriteString("\nJob wait (submission to last pod bound), trace seconds, by gang size: p50 / p95 / p99 (jobs); a job never started counts with its wait until the run ended\n\n| profile |")
	for _, c := range trace.SizeClasses {
		fmt.Fprintf(&b, " size %s |", c)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(trace.SizeClasses)) + "\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "| %s |", r.Profile)
		for _, c := range trace.SizeClasses {
			w := r.ByClass[c]
			fmt.Fprintf(&b, " %.0f / %.0f / %.0f (%d) |", w.P50, w.P95, w.P99, w.Jobs)
		}
		b.WriteString("\n")
	}

	b.WriteString(evictionTable(rep.Results))
	b.WriteString(etaTable(rep.Results))

	b.WriteString("\nShare error while contended: mean |allocated - deserved| in cores (and over deserved), deserved by pkg/queue.Divide on each sample's demand\n\n| profile |")
	for _, q := range p.Queues {
		fmt.Fprintf(&b, " %s (w%d) |", q.Name, q.Weight)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(p.Queues)) + "\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "| %s |", r.Profile)
		for _, q := range r.Queues {
			fmt.Fprintf(&b, " %.1f (%.0f%%) |", q.MeanAbsError, 100*q.MeanRelError)
		}
		b.WriteString("\n")
	}
	b.WriteString(targets(rep))
	b.WriteString(planTargets(rep))
	b.WriteString(lateJobs(rep))
	b.WriteString(evictionPlans(rep))
	return b.String()
}

// evictionTable counts each profile's evictions by cause
// (score.Eviction.Cause).
func evictionTable(results []score.Result) string {
	var b strings.Builder
	b.WriteString("\nEvictions by cause, from the scheduler's Events: lending (the victim's group was last admitted on lent room), " +
		"backfill-overrun (the victim started by backfill on a node another group's reservation named, and was evicted for that group, " +
		"or was evicted past its limit, `OverranRunLimit`), limit-overrun (`OverranRunLimit`: admission evicted the victim, not backfilled, " +
		"past its annotated limit into a reservation come due), " +
		"reclaim (CalderaReclaim's `Reclaimed`: the victim's queue above its deserved share, neither of the above), " +
		"preemption (`Preempted`: a higher-priority group of the same queue), unknown (no Event found). " +
		"Victims backfilled (bound on a reserved node ahead of its reservation) and victims past their declared limit are counted whatever the cause.\n\n")
	b.WriteString("| profile | evictions | ")
	b.WriteString(strings.Join(score.Causes, " | "))
	b.WriteString(" | victims backfilled | victims past their limit | fresh | work evicted core-s | of a queue not above its share |\n|---|---|")
	b.WriteString(strings.Repeat("---|", len(score.Causes)+5) + "\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d |", r.Profile, r.Evictions)
		for _, c := range score.Causes {
			fmt.Fprintf(&b, " %d |", r.EvictionCauses[c])
		}
		fmt.Fprintf(&b, " %d | %d | %d | %.0f | %d |\n", r.EvictedBackfilled, r.EvictedOverran, r.EvictedFresh, r.EvictedWork, r.EvictionsNotAboveShare)
	}
	return b.String()
}

// etaTable compares starts with the first expected start (ETA) each job
// was given, for the profiles that give one: all such jobs, and those
// whose every predecessor declared a limit.
func etaTable(results []score.Result) string {
	var b strings.Builder
	for _, r := range results {
		e := r.ETA
		if e.Jobs == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nStart vs first ETA: jobs given an expected start while waiting (first value seen: a gang's PodGroup expected-start annotation, " +
				"a single pod's NotAdmitted verdict \"reserved from T\"); " +
				"lateness = start (last pod bound) - first ETA, trace seconds (negative: early); a job never started counts with the run's end; " +
				"on time: started no later than first ETA + 1 wall second. \"Predecessors limited\": the jobs for which every other job holding room " +
				"when the first ETA was seen declared a run-time limit\n\n")
			b.WriteString("| profile | jobs | never started | lateness p10 | p50 | p90 | max | on time | predecessors limited: jobs | p50 | p90 | max | on time |\n" +
				"|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		}
		l := e.Limited
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %d (%.1f%%) | %d | %.0f | %.0f | %.0f | %d (%.1f%%) |\n",
			r.Profile, e.Jobs, e.NeverStarted, e.P10, e.P50, e.P90, e.Max, e.OnTime, 100*e.OnTimeShare,
			l.Jobs, l.P50, l.P90, l.Max, l.OnTime, 100*l.OnTimeShare)
	}
	return b.String() + estimateTable(results)
}

// estimateTable compares starts with the first estimated start each gang
// was given while it waited for jobs without a limit.
func estimateTable(results []score.Result) string {
	var b strings.Builder
	for _, r := range results {
		e := r.ETA.Estimated
		if e.Jobs == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nStart vs first estimated start: gangs given one while they waited for jobs without a run-time limit (the PodGroup's " +
				"estimated-start annotation, learned from finished pods' run times; an estimate, holding no room); lateness and on time as above\n\n" +
				"| profile | jobs | never started | lateness p10 | p50 | p90 | max | on time |\n|---|---|---|---|---|---|---|---|\n")
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %d (%.1f%%) |\n",
			r.Profile, e.Jobs, e.NeverStarted, e.P10, e.P50, e.P90, e.Max, e.OnTime, 100*e.OnTimeShare)
	}
	return b.String()
}

// targets checks issue 21's targets for caldera against this run.
func targets(rep Report) string {
	var cal *score.Result
	others := map[string]score.Result{}
	for i, r := range rep.Results {
		if r.Profile == profileCaldera {
			cal = &rep.Results[i]
		} else {
			others[r.Profile] = r
		}
	}
	if cal == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nTargets (caldera)\n\n| target | measured | met |\n|---|---|---|\n")
	row := func(target, measured string, met bool) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", target, measured, map[bool]string{true: "yes", false: "NO"}[met])
	}
	row("utilization >= 90% while demand exceeds capacity", fmt.Sprintf("%.1f%%", 100*cal.ContendedUtilization), cal.ContendedUtilization >= 0.9)
	for _, q := range cal.Queues {
		var d float64
		for _, v := range q.Deserved {
			d += v
		}
		if len(q.Deserved) > 0 {
			d /= float64(len(q.Deserved))
		}
		tol := max(podCores, 0.05*d)
		row(fmt.Sprintf("share error of %s <= max(1 pod = %.0f cores, 5%%)", q.Name, podCores), fmt.Sprintf("%.1f cores (tolerance %.1f)", q.MeanAbsError, tol), q.MeanAbsError <= tol)
	}
	window := rep.Options.Compression // one wall second, in trace seconds
	row("no gang partially bound beyond its binding window (1 wall second)", fmt.Sprintf("%.0f partial-gang node-s, longest %.1f s", cal.PartialNodeSeconds, cal.MaxPartialSeconds), cal.MaxPartialSeconds <= window)
	bound := float64(rep.Options.StarvationThresholdSeconds) + rep.Stats.MaxRun.Seconds()
	row(fmt.Sprintf("max wait <= starvation bound + longest run (%d + %.0f s)", rep.Options.StarvationThresholdSeconds, rep.Stats.MaxRun.Seconds()), fmt.Sprintf("%.0f s", cal.MaxWait), cal.MaxWait <= bound)
	row("0 deadlocks (unfinished at the end of the drain)", fmt.Sprint(cal.Unfinished), cal.Unfinished == 0)
	row("0 evictions once shares are at deserved (of a queue not above its deserved share just before the eviction)",
		fmt.Sprintf("%d of %d evictions", cal.EvictionsNotAboveShare, cal.Evictions), cal.EvictionsNotAboveShare == 0)
	for _, name := range []string{profileDefault, profileUpstream} {
		o, ok := others[name]
		if !ok {
			continue
		}
		mk := cal.Unfinished == 0 && (o.Unfinished > 0 || cal.Makespan < o.Makespan)
		row("makespan better than "+name, fmt.Sprintf("%s vs %s", makespan(*cal), makespan(o)), mk)
		row("wait p95 better than "+name, fmt.Sprintf("%.0f s vs %.0f s", cal.All.P95, o.All.P95), cal.All.P95 < o.All.P95)
	}
	return b.String()
}

func makespan(r score.Result) string {
	if r.Unfinished > 0 {
		return fmt.Sprintf("none (%d unfinished)", r.Unfinished)
	}
	return fmt.Sprintf("%.0f s", r.Makespan)
}

// Issue 34's targets ("plan over time").
const (
	planUtilization  = 0.93
	planMakespan     = 1.2 // x the ideal drain
	planETAOnTime    = 0.9
	calderaPrefix    = "caldera"
	maxPlanRowsShown = 40
)

// planTargets checks issue 34's targets for every Caldera profile of the
// run, one column each.
func planTargets(rep Report) string {
	var cal []score.Result
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Profile, calderaPrefix) {
			cal = append(cal, r)
		}
	}
	if len(cal) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nTargets of issue 34 (plan over time), each Caldera profile\n\n| target |")
	for _, r := range cal {
		fmt.Fprintf(&b, " %s |", r.Profile)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cal)) + "\n")
	// A cell is "yes" or "NO" and what was measured; "n/a" when the
	// profile does not do what the target measures.
	row := func(target string, cell func(r score.Result) (string, bool)) {
		fmt.Fprintf(&b, "| %s |", target)
		for _, r := range cal {
			v, ok := cell(r)
			if strings.HasPrefix(v, "n/a") {
				fmt.Fprintf(&b, " %s |", v)
				continue
			}
			fmt.Fprintf(&b, " %s %s |", map[bool]string{true: "yes", false: "NO"}[ok], v)
		}
		b.WriteString("\n")
	}
	row(fmt.Sprintf("utilization >= %.0f%% while demand exceeds capacity", 100*planUtilization), func(r score.Result) (string, bool) {
		return fmt.Sprintf("%.1f%%", 100*r.ContendedUtilization), r.ContendedUtilization >= planUtilization
	})
	ideal := rep.Stats.IdealDrain.Seconds()
	row(fmt.Sprintf("makespan <= %.1fx ideal drain (%.0f s)", planMakespan, planMakespan*ideal), func(r score.Result) (string, bool) {
		return makespan(r), r.Unfinished == 0 && r.Makespan <= planMakespan*ideal
	})
	for _, c := range trace.SizeClasses {
		row("wait p95 below every other profile, size "+c, func(r score.Result) (string, bool) {
			mine := r.ByClass[c].P95
			var beat []string
			for _, o := range rep.Results {
				if o.Profile != r.Profile && o.ByClass[c].P95 <= mine {
					beat = append(beat, fmt.Sprintf("%s %.0f", o.Profile, o.ByClass[c].P95))
				}
			}
			v := fmt.Sprintf("%.0f s", mine)
			if len(beat) > 0 {
				v += " (not below " + strings.Join(beat, ", ") + ")"
			}
			return v, len(beat) == 0
		})
	}
	bound := float64(rep.Options.StarvationThresholdSeconds)
	row(fmt.Sprintf("max wait <= starvation bound (%.0f s)", bound), func(r score.Result) (string, bool) {
		return fmt.Sprintf("%.0f s", r.MaxWait), r.MaxWait <= bound
	})
	row(fmt.Sprintf("started by first ETA in >= %.0f%% (jobs whose predecessors all declared limits)", 100*planETAOnTime), func(r score.Result) (string, bool) {
		l := r.ETA.Limited
		if r.ETA.Jobs == 0 {
			return "n/a: no ETA given", false
		}
		return fmt.Sprintf("%d of %d (%.0f%%; all jobs with an ETA: %d of %d)", l.OnTime, l.Jobs, 100*l.OnTimeShare, r.ETA.OnTime, r.ETA.Jobs), l.OnTimeShare >= planETAOnTime
	})
	row("0 evictions caused by lending or backfill", func(r score.Result) (string, bool) {
		n := r.EvictionCauses[score.CauseLending] + r.EvictionCauses[score.CauseBackfill]
		return fmt.Sprintf("%d (lending %d, backfill-overrun %d; limit-overrun %d)", n, r.EvictionCauses[score.CauseLending],
			r.EvictionCauses[score.CauseBackfill], r.EvictionCauses[score.CauseOverrun]), n == 0
	})
	return b.String()
}

// evictionPlans lists each profile's evictions by the pod they made room
// for, in order: who was evicted for whom, when, and why.
func evictionPlans(rep Report) string {
	var b strings.Builder
	for i, run := range rep.Runs {
		if len(run.EvictionLog) == 0 {
			continue
		}
		jobs := map[int]score.Job{}
		for _, j := range run.Jobs {
			jobs[j.ID] = j
		}
		rows := evictionRows(run.EvictionLog)
		fmt.Fprintf(&b, "\nEvictions of %s by the job they made room for (%d evictions, %d preemptors); trace seconds; "+
			"\"ETA\": the preemptor had been given an expected start (its first, and how its start compares)\n\n", rep.Results[i].Profile, len(run.EvictionLog), len(rows))
		b.WriteString("| at | for (queue/job, size, arrived, started) | ETA | victims (pods of queue/job: cause) | ran s | past limit |\n|---|---|---|---|---|---|\n")
		for k, row := range rows {
			if k == maxPlanRowsShown {
				fmt.Fprintf(&b, "| ... | %d more in results.json | | | | |\n", len(rows)-k)
				break
			}
			b.WriteString(row.markdown(jobs))
		}
	}
	return b.String()
}

// evictionRow is the evictions made for one preemptor job.
type evictionRow struct {
	job     int // -1: unknown
	first   float64
	victims []score.Eviction
}

// evictionRows groups the log by preemptor job, in the order of their
// first eviction; evictions without a known preemptor are one row each.
func evictionRows(log []score.Eviction) []*evictionRow {
	var rows []*evictionRow
	by := map[int]*evictionRow{}
	for _, e := range log {
		row := by[e.PreemptorJob]
		if row == nil || e.PreemptorJob < 0 {
			row = &evictionRow{job: e.PreemptorJob, first: e.T}
			rows = append(rows, row)
			if e.PreemptorJob >= 0 {
				by[e.PreemptorJob] = row
			}
		}
		row.victims = append(row.victims, e)
	}
	return rows
}

func (row *evictionRow) markdown(jobs map[int]score.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %.0f |", row.first)
	eta := ""
	if j, ok := jobs[row.job]; ok {
		fmt.Fprintf(&b, " %s/job-%04d, %d, %.0f, %.0f |", j.Queue, j.ID, j.Size, j.Arrival, j.Start)
		switch {
		case j.FirstETA != nil && j.Start >= 0:
			eta = fmt.Sprintf("%.0f (start %+.0f)", *j.FirstETA, j.Start-*j.FirstETA)
		case j.FirstETA != nil:
			eta = fmt.Sprintf("%.0f (never started)", *j.FirstETA)
		}
	} else {
		b.WriteString(" unknown |")
	}
	fmt.Fprintf(&b, " %s |", eta)
	// Victims by job, in order of first appearance.
	type group struct {
		queue      string
		job, n     int
		causes     map[string]int
		minR, maxR float64
		overran    int
		done       int
	}
	var order []*group
	byJob := map[int]*group{}
	for _, e := range row.victims {
		g := byJob[e.Job]
		if g == nil {
			g = &group{queue: e.Queue, job: e.Job, causes: map[string]int{}, minR: e.Ran, maxR: e.Ran}
			byJob[e.Job] = g
			order = append(order, g)
		}
		g.n++
		g.causes[e.Cause()]++
		g.minR, g.maxR = min(g.minR, e.Ran), max(g.maxR, e.Ran)
		if e.Overran() {
			g.overran++
		}
		if e.Done {
			g.done++
		}
	}
	var vs, ran, over []string
	for _, g := range order {
		var cs []string
		for _, c := range score.Causes {
			if n := g.causes[c]; n > 0 {
				cs = append(cs, fmt.Sprintf("%s %d", c, n))
			}
		}
		v := fmt.Sprintf("%d of %s/job-%04d: %s", g.n, g.queue, g.job, strings.Join(cs, ", "))
		if g.done > 0 {
			v += fmt.Sprintf(" (%d after its run ended)", g.done)
		}
		vs = append(vs, v)
		lo, hi := fmt.Sprintf("%.0f", g.minR), fmt.Sprintf("%.0f", g.maxR)
		if lo == hi {
			ran = append(ran, lo)
		} else {
			ran = append(ran, lo+"-"+hi)
		}
		over = append(over, fmt.Sprint(g.overran))
	}
	fmt.Fprintf(&b, " %s | %s | %s |\n", strings.Join(vs, "; "), strings.Join(ran, "; "), strings.Join(over, "; "))
	return b.String()
}

// maxVerdictsShown bounds the verdicts shown per late job: the last ones
// before its start, which say what held it.
const maxVerdictsShown = 6

// lateJobs lists, for each profile that gives ETAs, the jobs that started
// later than their first ETA allowed (or never), with the verdicts they
// were told from then on: why the start moved.
func lateJobs(rep Report) string {
	var b strings.Builder
	for i, run := range rep.Runs {
		tol := rep.Results[i].ETA.Tolerance
		var late []score.Job
		for _, j := range run.Jobs {
			if j.FirstETA != nil && (j.Start < 0 || j.Start-*j.FirstETA > tol) {
				late = append(late, j)
			}
		}
		if len(late) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nJobs of %s started later than their first ETA + %.0f s (%d), with what the scheduler told them "+
			"(their last %d admission Events; trace seconds, wall-clock times in notes)\n\n", rep.Results[i].Profile, tol, len(late), maxVerdictsShown)
		b.WriteString("| job (size) | predecessors limited | first ETA | start | late s | evicted pods | verdicts |\n|---|---|---|---|---|---|---|\n")
		for _, j := range late {
			start, lateness := "never", run.End-*j.FirstETA
			if j.Start >= 0 {
				start, lateness = fmt.Sprintf("%.0f", j.Start), j.Start-*j.FirstETA
			}
			var vs []string
			for _, v := range j.Verdicts {
				vs = append(vs, fmt.Sprintf("%.0f %s: %s", v.T, v.Reason, strings.ReplaceAll(v.Note, "|", "/")))
			}
			if len(vs) > maxVerdictsShown {
				vs = append([]string{fmt.Sprintf("(%d earlier)", len(vs)-maxVerdictsShown)}, vs[len(vs)-maxVerdictsShown:]...)
			}
			fmt.Fprintf(&b, "| %s/job-%04d (%d) | %v | %.0f | %s | %.0f | %d | %s |\n", j.Queue, j.ID, j.Size, j.PredecessorsLimited,
				*j.FirstETA, start, lateness, j.Evicted, strings.Join(vs, "<br>"))
		}
	}
	return b.String()
}
