// Command plot draws the quality benchmark's charts (docs/quality.md) from
// its results.json: utilization over time (every profile with its useful
// part, and the profiles side by side with the demand), each queue's
// allocated and deserved share over time per profile, the job wait-time
// CDF, and the CDF of start - first ETA for the profiles that give ETAs.
// It is a module of its own so that gonum/plot stays out of Caldera's
// go.mod.
//
//	go -C test/quality/plot run . -in quality-results/results.json -out quality-results
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// report is the part of results.json (test/quality.Report) the charts use.
type report struct {
	Params struct {
		Seed  uint64
		Nodes int
	}
	Results []result
}

type result struct {
	Profile        string
	T, Utilization []float64
	Useful, Demand []float64
	WaitsSorted    []float64
	Queues         []struct {
		Name                string
		Deserved, Allocated []float64
	}
	ETA struct {
		Tolerance                 float64
		Lateness, LimitedLateness []float64
	}
}

var palette = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255},
	color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
}

func main() {
	in := flag.String("in", "quality-results/results.json", "results.json of a quality run")
	out := flag.String("out", "quality-results", "directory for the PNG files")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	charts := map[string]*plot.Plot{
		"utilization.png": utilization(rep), "wait-cdf.png": waitCDF(rep),
		"utilization-profiles.png": utilizationProfiles(rep),
	}
	if p := etaCDF(rep); p != nil {
		charts["eta-cdf.png"] = p
	}
	for _, r := range rep.Results {
		charts["shares-"+r.Profile+".png"] = shares(rep, r.Profile)
	}
	for name, p := range charts {
		if err := p.Save(9*vg.Inch, 4.5*vg.Inch, filepath.Join(out, name)); err != nil {
			return err
		}
		fmt.Println("wrote", filepath.Join(out, name))
	}
	return nil
}

// line draws ys over xs, solid or dashed.
func line(p *plot.Plot, label string, xs, ys []float64, c color.Color, dashed bool) {
	var dashes []vg.Length
	if dashed {
		dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	styled(p, label, xs, ys, c, vg.Points(1.2), dashes)
}

// styled draws ys over xs with the given width and dashes (nil: solid).
func styled(p *plot.Plot, label string, xs, ys []float64, c color.Color, width vg.Length, dashes []vg.Length) {
	pts := make(plotter.XYs, min(len(xs), len(ys)))
	for i := range pts {
		pts[i].X, pts[i].Y = xs[i], ys[i]
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return
	}
	l.Color = c
	l.Width = width
	l.Dashes = dashes
	p.Add(l)
	p.Legend.Add(label, l)
}

func utilization(rep report) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Utilization (allocated / allocatable cpu), seed %d, %d nodes; dashed: without partial gangs", rep.Params.Seed, rep.Params.Nodes)
	p.X.Label.Text = "trace seconds"
	p.Y.Label.Text = "fraction of cluster cpu"
	p.Y.Min, p.Y.Max = 0, 1.05
	for i, r := range rep.Results {
		c := palette[i%len(palette)]
		line(p, r.Profile, r.T, r.Utilization, c, false)
		line(p, r.Profile+" (useful)", r.T, r.Useful, c, true)
	}
	p.Legend.Top = false
	p.Add(plotter.NewGrid())
	return p
}

func shares(rep report, profile string) *plot.Plot {
	p := plot.New()
	p.Title.Text = profile + ": each queue's allocated cpu (solid) and deserved share (dashed, water-filling on demand)"
	p.X.Label.Text = "trace seconds"
	p.Y.Label.Text = "cores"
	for _, r := range rep.Results {
		if r.Profile != profile {
			continue
		}
		for i, q := range r.Queues {
			c := palette[i%len(palette)]
			line(p, q.Name, r.T, q.Allocated, c, false)
			line(p, q.Name+" deserved", r.T, q.Deserved, c, true)
		}
	}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	return p
}

func waitCDF(rep report) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Job wait (submission to last pod bound), CDF; jobs never started count with their wait until the run ended"
	p.X.Label.Text = "wait, trace seconds"
	p.Y.Label.Text = "fraction of jobs"
	p.Y.Min, p.Y.Max = 0, 1.02
	for i, r := range rep.Results {
		n := len(r.WaitsSorted)
		xs, ys := make([]float64, 0, 2*n), make([]float64, 0, 2*n)
		for k, w := range r.WaitsSorted {
			xs = append(xs, w, w)
			ys = append(ys, float64(k)/float64(n), float64(k+1)/float64(n))
		}
		line(p, r.Profile, xs, ys, palette[i%len(palette)], false)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	return p
}

// smoothWindow is the moving average's width, in samples, of the
// side-by-side utilization chart: 5 samples are 20 trace seconds at the
// default compression, short against a run and long enough to tell the
// profiles' lines apart.
const smoothWindow = 5

// smooth is the trailing moving average of ys over w samples.
func smooth(ys []float64, w int) []float64 {
	out := make([]float64, len(ys))
	var sum float64
	for i, y := range ys {
		sum += y
		if i >= w {
			sum -= ys[i-w]
		}
		out[i] = sum / float64(min(i+1, w))
	}
	return out
}

// utilizationProfiles draws every profile's utilization on one chart,
// smoothed, with the demand of the first Caldera profile (capped) to show
// when the cluster is contended: with and without backfill (caldera,
// caldera-instant) and with lending (caldera-lend) side by side.
func utilizationProfiles(rep report) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Utilization over time, seed %d, %d nodes (%d-sample moving average); dotted: demand / capacity, capped at %.1f", rep.Params.Seed, rep.Params.Nodes, smoothWindow, demandCap)
	p.X.Label.Text = "trace seconds"
	p.Y.Label.Text = "allocated / allocatable cpu"
	p.Y.Min, p.Y.Max = 0, 1.6
	demandDrawn := false
	for i, r := range rep.Results {
		c := palette[i%len(palette)]
		line(p, r.Profile, r.T, smooth(r.Utilization, smoothWindow), c, false)
		if !demandDrawn && len(r.Demand) > 0 && strings.HasPrefix(r.Profile, "caldera") {
			d := make([]float64, len(r.Demand))
			for k, v := range r.Demand {
				d[k] = min(v, demandCap)
			}
			dotted(p, r.Profile+" demand", r.T, d, c)
			demandDrawn = true
		}
	}
	full := plotter.NewFunction(func(float64) float64 { return 1 })
	full.Color = color.Gray{Y: 120}
	full.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(full)
	p.Legend.Top = true // above the capped demand
	p.Add(plotter.NewGrid())
	return p
}

// demandCap caps the demand drawn on the utilization chart: above it the
// cluster is contended all the same.
const demandCap = 1.2

// dotted draws ys over xs thin and dotted, for the demand under a
// profile's utilization.
func dotted(p *plot.Plot, label string, xs, ys []float64, c color.Color) {
	styled(p, label, xs, ys, c, vg.Points(0.8), []vg.Length{vg.Points(1), vg.Points(2)})
}

// cdf draws sorted values as a step CDF.
func cdf(p *plot.Plot, label string, sorted []float64, c color.Color, dashed bool) {
	n := len(sorted)
	xs, ys := make([]float64, 0, 2*n), make([]float64, 0, 2*n)
	for k, v := range sorted {
		xs = append(xs, v, v)
		ys = append(ys, float64(k)/float64(n), float64(k+1)/float64(n))
	}
	line(p, label, xs, ys, c, dashed)
}

// etaCDF draws, for each profile that gave ETAs, the CDF of start - first
// ETA over every gang given one (solid) and over those whose predecessors
// all declared a limit (dashed); nil when no profile gave any.
func etaCDF(rep report) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Start - first ETA (trace s, negative: early), CDF; dashed: jobs whose predecessors all declared limits"
	p.X.Label.Text = "start - first ETA, trace seconds"
	p.Y.Label.Text = "fraction of jobs given an ETA"
	p.Y.Min, p.Y.Max = 0, 1.02
	drawn := false
	tol := 0.0
	for i, r := range rep.Results {
		e := r.ETA
		if len(e.Lateness) == 0 {
			continue
		}
		drawn = true
		tol = e.Tolerance
		c := palette[i%len(palette)]
		cdf(p, fmt.Sprintf("%s (%d jobs)", r.Profile, len(e.Lateness)), e.Lateness, c, false)
		if len(e.LimitedLateness) > 0 {
			cdf(p, fmt.Sprintf("%s, predecessors limited (%d)", r.Profile, len(e.LimitedLateness)), e.LimitedLateness, c, true)
		}
	}
	if !drawn {
		return nil
	}
	// The on-time line: first ETA + one wall second.
	on, err := plotter.NewLine(plotter.XYs{{X: tol, Y: 0}, {X: tol, Y: 1.02}})
	if err == nil {
		on.Color = color.Gray{Y: 100}
		on.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(on)
		p.Legend.Add(fmt.Sprintf("on time: <= ETA + %.0f s", tol), on)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	return p
}
