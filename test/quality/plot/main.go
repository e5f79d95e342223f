// Command plot draws the quality benchmark's charts (docs/quality.md) from
// its results.json: utilization over time, each queue's allocated and
// deserved share over time per profile, and the job wait-time CDF. It is a
// module of its own so that gonum/plot stays out of Caldera's go.mod.
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
	Results []struct {
		Profile        string
		T, Utilization []float64
		Useful         []float64
		WaitsSorted    []float64
		Queues         []struct {
			Name                string
			Deserved, Allocated []float64
		}
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
	charts := map[string]*plot.Plot{"utilization.png": utilization(rep), "wait-cdf.png": waitCDF(rep)}
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

func line(p *plot.Plot, label string, xs, ys []float64, c color.Color, dashed bool) {
	pts := make(plotter.XYs, min(len(xs), len(ys)))
	for i := range pts {
		pts[i].X, pts[i].Y = xs[i], ys[i]
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return
	}
	l.Color = c
	l.Width = vg.Points(1.2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
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
