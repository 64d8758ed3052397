package main

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotLatencies draws every latency distribution as a horizontal box plot on one log axis in
// milliseconds: the floors and cf-hnc differ by orders of magnitude.
func plotLatencies(r *Results, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Latencies, %d orgs × %d spaces (box: p25–p75, line: p50)", r.Orgs, r.SpacesPerOrg)
	p.X.Label.Text = "milliseconds (log)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	var names []string
	for _, d := range []Distribution{r.Floor.Latency, r.HNC.Latency, r.CFHNC.Latency, r.OwnShareBulk, r.HNCQuiet, r.InOrgQuiet, r.Quiet, r.OwnShareQuiet} {
		if d.Count == 0 {
			continue
		}
		values := make(plotter.Values, len(d.Samples))
		for i, s := range d.Samples {
			// A log axis has no zero: a share under a millisecond (or below the watches'
			// ordering noise) is drawn at 1 ms.
			values[i] = math.Max(s*1000, 1)
		}
		box, err := plotter.NewBoxPlot(vg.Points(18), float64(len(names)), values)
		if err != nil {
			return err
		}
		box.Horizontal = true
		p.Add(box)
		names = append(names, fmt.Sprintf("%s (n=%d)", d.Name, d.Count))
	}
	if len(names) == 0 {
		return nil
	}
	p.NominalY(names...)
	return p.Save(9*vg.Inch, vg.Length(1.2+0.6*float64(len(names)))*vg.Inch, path)
}
