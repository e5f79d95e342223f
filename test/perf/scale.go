package perf

import (
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The scheduler's own latency histograms that W7 (preemption) and W8
// (placement) read, by extension point and by plugin. They are observed on
// every cycle (framework_extension_point_duration_seconds) or, per plugin,
// on about 10% of cycles (upstream's pluginMetricsSamplePercent).
const (
	extensionPointMetric = "scheduler_framework_extension_point_duration_seconds"
	pluginMetric         = "scheduler_plugin_execution_duration_seconds"
	algorithmMetric      = "scheduler_scheduling_algorithm_duration_seconds"
)

// Timing is one latency histogram's difference over a run.
type Timing struct {
	Count  float64 `json:"count"`
	MeanMs float64 `json:"meanMs"`
	P50Ms  float64 `json:"p50Ms"`
	P99Ms  float64 `json:"p99Ms"`
}

// timingSeries names the series a run records in Result.Timings: the key,
// the metric and the labels a series must carry. The profile label is
// added for the extension-point metric; the plugin metric has none, so its
// rows are the whole process's (one scheduler runs at a time).
type timingSeries struct {
	key, metric string
	match       map[string]string
	perProfile  bool
}

// timingSet is what every in-process run records: the cycle (algorithm:
// Filter through Score, no Permit wait, no bind), the extension points W7
// and W8 price, and the plugins behind them.
var timingSet = []timingSeries{
	{"algorithm", algorithmMetric, nil, false},
	{"PostFilter", extensionPointMetric, map[string]string{"extension_point": "PostFilter"}, true},
	{"PreScore", extensionPointMetric, map[string]string{"extension_point": "PreScore"}, true},
	{"Score", extensionPointMetric, map[string]string{"extension_point": "Score"}, true},
	{"Filter", extensionPointMetric, map[string]string{"extension_point": "Filter"}, true},
	{"CalderaReclaim/PostFilter", pluginMetric, map[string]string{"plugin": "CalderaReclaim", "extension_point": "PostFilter"}, false},
	{"DefaultPreemption/PostFilter", pluginMetric, map[string]string{"plugin": "DefaultPreemption", "extension_point": "PostFilter"}, false},
	{"CalderaGangPlacement/PreScore", pluginMetric, map[string]string{"plugin": "CalderaGangPlacement", "extension_point": "PreScore"}, false},
	{"CalderaGangPlacement/Score", pluginMetric, map[string]string{"plugin": "CalderaGangPlacement", "extension_point": "Score"}, false},
}

// sample is a histogram with its sum, for a mean.
type sample struct {
	h          histogram
	count, sum float64
}

// timingSnapshot gathers every timingSet series of profile from the
// process's registry (the in-process scheduler's).
func timingSnapshot(profile string) map[string]sample {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil
	}
	out := map[string]sample{}
	for _, s := range timingSet {
		match := s.match
		if s.perProfile {
			match = map[string]string{"profile": profile}
			for k, v := range s.match {
				match[k] = v
			}
		}
		count, sum := histogramSum(families, s.metric, match)
		out[s.key] = sample{h: histogramOf(families, s.metric, match), count: count, sum: sum}
	}
	return out
}

// histogramSum is the sample count and sum of the histogram name over every
// series whose labels include match.
func histogramSum(families []*dto.MetricFamily, name string, match map[string]string) (count, sum float64) {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if h := m.GetHistogram(); h != nil && matches(labels, match) {
				count += float64(h.GetSampleCount())
				sum += h.GetSampleSum()
			}
		}
	}
	return count, sum
}

// timingsBetween is each series' difference from before to after; series
// with no observation in between are left out.
func timingsBetween(before, after map[string]sample) map[string]Timing {
	out := map[string]Timing{}
	for k, a := range after {
		b := before[k]
		n := a.count - b.count
		if n <= 0 {
			continue
		}
		h := a.h.sub(b.h)
		out[k] = Timing{Count: n, MeanMs: (a.sum - b.sum) / n * 1000, P50Ms: finite(h.quantile(0.5)) * 1000, P99Ms: finite(h.quantile(0.99)) * 1000}
	}
	return out
}

// scaleTargets are the W7 and W8 targets: a preemption decision
// (one PostFilter) <= 50 ms at 5000 nodes, and PreScore <= 20% of a member's
// cycle.
const (
	maxPostFilterMs5000 = 50
	maxPreScoreShare    = 0.20
)

// scaleRatios are W7's and W8's figures per (workload, profile) from the
// medians over runs.
func (r *Report) scaleRatios() []Ratio {
	var out []Ratio
	for _, k := range r.keys(func(w string) bool { return strings.HasPrefix(w, "W7") || strings.HasPrefix(w, "W8") }) {
		t := func(key string, f func(Timing) float64) (float64, bool) {
			return r.median(k.workload, k.profile, func(res Result) float64 { return f(res.Timings[key]) })
		}
		mean := func(x Timing) float64 { return x.MeanMs }
		if strings.HasPrefix(k.workload, "W7") {
			if v, ok := t("PostFilter", mean); ok && v > 0 {
				ratio := Ratio{Name: fmt.Sprintf("%s PostFilter mean ms, %s", k.workload, k.profile), Value: v}
				if r.nodes(k.workload) >= 5000 {
					ratio.Target, ratio.Holds = fmt.Sprintf("<= %d", maxPostFilterMs5000), new(v <= maxPostFilterMs5000)
				}
				out = append(out, ratio)
			}
			if v, ok := r.median(k.workload, k.profile, func(res Result) float64 { return float64(res.Evictions) / float64(max(res.Pods, 1)) }); ok {
				out = append(out, Ratio{Name: fmt.Sprintf("%s evictions per preemptor pod, %s", k.workload, k.profile), Value: v})
			}
			continue
		}
		pre, ok1 := t("PreScore", mean)
		cycle, ok2 := t("algorithm", mean)
		if ok1 && ok2 && cycle > 0 {
			v := pre / cycle
			out = append(out, Ratio{Name: fmt.Sprintf("%s PreScore / member cycle (means), %s", k.workload, k.profile), Value: v,
				Target: fmt.Sprintf("<= %.2f", maxPreScoreShare), Holds: new(v <= maxPreScoreShare)})
		}
	}
	for _, w := range r.workloadNames("W7") {
		num, ok1 := r.median(w, ProfileCaldera, func(res Result) float64 { return res.Seconds })
		den, ok2 := r.median(w, ProfileDefault, func(res Result) float64 { return res.Seconds })
		if ok1 && ok2 && den > 0 {
			out = append(out, Ratio{Name: w + " time until every preemptor runs, caldera / default", Value: num / den})
		}
	}
	return out
}

// resultKey is a (workload, profile) pair.
type resultKey struct{ workload, profile string }

// keys are the (workload, profile) pairs of the results whose workload
// keep selects, in the order they ran.
func (r *Report) keys(keep func(string) bool) []resultKey {
	var out []resultKey
	for _, res := range r.Results {
		k := resultKey{res.Workload, res.Profile}
		if keep(res.Workload) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// workloadNames are the distinct workloads whose name starts with prefix.
func (r *Report) workloadNames(prefix string) []string {
	var out []string
	for _, res := range r.Results {
		if strings.HasPrefix(res.Workload, prefix) && !slices.Contains(out, res.Workload) {
			out = append(out, res.Workload)
		}
	}
	return out
}

// nodes is the node count of a workload's results.
func (r *Report) nodes(workload string) int {
	for _, res := range r.Results {
		if res.Workload == workload {
			return res.Nodes
		}
	}
	return 0
}

// writeTimings writes, for the W7 and W8 runs, the scheduler's own
// latencies: the cycle, the extension points and the plugins behind them,
// and W7's evictions.
func writeTimings(b *strings.Builder, results []Result) {
	header := false
	cell := func(x Timing) string {
		if x.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f / %.2f / %.2f / %.2f", x.Count, x.MeanMs, x.P50Ms, x.P99Ms)
	}
	for _, x := range results {
		if !strings.HasPrefix(x.Workload, "W7") && !strings.HasPrefix(x.Workload, "W8") {
			continue
		}
		if !header {
			header = true
			b.WriteString("\nW7 and W8, the scheduler's own histograms over the run, each `count / mean / p50 / p99` (ms). Extension points: every cycle of the profile; plugins: the ~10% of cycles upstream samples.\n\n")
			b.WriteString("| workload | profile | run | evictions | member cycle (algorithm) | Filter | PostFilter | reclaim or preemption plugin, PostFilter | PreScore | Score | CalderaGangPlacement PreScore | CalderaGangPlacement Score |\n")
			b.WriteString("| --- | --- | --- | ---: | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		}
		plugin := x.Timings["CalderaReclaim/PostFilter"]
		if plugin.Count == 0 {
			plugin = x.Timings["DefaultPreemption/PostFilter"]
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Workload, x.Profile, x.Run, x.Evictions,
			cell(x.Timings["algorithm"]), cell(x.Timings["Filter"]), cell(x.Timings["PostFilter"]), cell(plugin),
			cell(x.Timings["PreScore"]), cell(x.Timings["Score"]),
			cell(x.Timings["CalderaGangPlacement/PreScore"]), cell(x.Timings["CalderaGangPlacement/Score"]))
	}
}

// finite replaces NaN and infinities (an empty histogram's quantile) by 0,
// which JSON can encode.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
