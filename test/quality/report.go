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
	return b.String()
}

// etaTable compares starts with the first expected start (ETA) each gang
// was given, for the profiles that give one.
func etaTable(results []score.Result) string {
	var b strings.Builder
	for _, r := range results {
		e := r.ETA
		if e.Jobs == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nStart vs first ETA: gangs given an expected start (the PodGroup's expected-start annotation, first value seen) while waiting; " +
				"lateness = start (last pod bound) - first ETA, trace seconds (negative: early); a job never started counts with the run's end; " +
				"on time: started no later than first ETA + 1 wall second\n\n")
			b.WriteString("| profile | jobs with ETA | never started | lateness p10 | p50 | p90 | max | on time (ETA + 1 wall s) |\n|---|---|---|---|---|---|---|---|\n")
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %d (%.1f%%, within %.0f s) |\n",
			r.Profile, e.Jobs, e.NeverStarted, e.P10, e.P50, e.P90, e.Max, e.OnTime, 100*e.OnTimeShare, e.Tolerance)
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
