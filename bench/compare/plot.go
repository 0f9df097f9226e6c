package main

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one line of a plot. A limit is drawn dashed, without
// points.
type series struct {
	Name  string
	XY    plotter.XYs
	Limit bool
}

// chart is one plot: figures against message size.
type chart struct {
	Title  string
	YLabel string
	LogY   bool
	Lines  []series
}

// sizeTicks labels a log-scale size axis at powers of 4 (1, 4, 16, 64,
// 256, 1K, ...) and marks the powers of 2 between them.
type sizeTicks struct{}

func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for v := 1.0; v <= max*1.0001; v *= 2 {
		if v < min*0.9999 {
			continue
		}
		label := ""
		if int(math.Log2(v))%2 == 0 {
			label = shortSize(v)
		}
		t = append(t, plot.Tick{Value: v, Label: label})
	}
	return t
}

// logTicks labels a log-scale axis at 1, 2 and 5 times the powers of
// ten and marks the other integer multiples: a latency axis that spans
// less than a decade still gets labels.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	var t []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		dec := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * dec
			if v < min*0.9999 || v > max*1.0001 {
				continue
			}
			label := ""
			if m == 1 || m == 2 || m == 5 {
				label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			t = append(t, plot.Tick{Value: v, Label: label})
		}
	}
	return t
}

// nice125 returns the nearest of 1, 2 and 5 times a power of ten below
// v (or above, with up).
func nice125(v float64, up bool) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	dec := math.Pow(10, math.Floor(math.Log10(v)))
	ms := []float64{1, 2, 5, 10}
	if up {
		for _, m := range ms {
			if m*dec >= v*0.9999 {
				return m * dec
			}
		}
		return 10 * dec
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i]*dec <= v*1.0001 {
			return ms[i] * dec
		}
	}
	return dec
}

// shortSize formats a power of two compactly: 64, 1K, 16M.
func shortSize(v float64) string {
	n := int64(v)
	switch {
	case n >= 1<<30:
		return strconv.FormatInt(n>>30, 10) + "G"
	case n >= 1<<20:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n >= 1<<10:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}

// positive drops the points a log axis cannot show (figures printed as
// 0.00).
func positive(xy plotter.XYs, logY bool) plotter.XYs {
	var out plotter.XYs
	for _, p := range xy {
		if p.X > 0 && (!logY || p.Y > 0) && !math.IsNaN(p.Y) {
			out = append(out, p)
		}
	}
	return out
}

// save draws the chart into a PNG file (the extension picks the
// format). It fails when no line has a point to draw.
func (c chart) save(path string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = c.YLabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	if c.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	p.Add(plotter.NewGrid())
	// Both kinds of figures rise to the right: the legend goes top left.
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(10)
	p.Legend.YOffs = -vg.Points(5)
	drawn := 0
	for i, s := range c.Lines {
		xy := positive(s.XY, c.LogY)
		if len(xy) == 0 {
			continue
		}
		col := plotutil.Color(i)
		if s.Limit {
			col = color.RGBA{A: 255} // black
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = col
			l.Width = vg.Points(1.5)
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(s.Name, l)
		} else {
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color = col
			l.Width = vg.Points(1.5)
			pts.Color = col
			pts.Shape = plotutil.Shape(i)
			p.Add(l, pts)
			p.Legend.Add(s.Name, l, pts)
		}
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("plot %q: nothing to draw", c.Title)
	}
	if c.LogY {
		// Widen the axis to labelled ticks (1, 2, 5 times a power of ten).
		p.Y.Min, p.Y.Max = nice125(p.Y.Min, false), nice125(p.Y.Max, true)
	} else {
		p.Y.Min = 0
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// sizeSeries returns a side's medians of a sized benchmark as points.
func sizeSeries(r *result, sd side) plotter.XYs {
	var xy plotter.XYs
	for _, k := range r.Keys {
		n, err := strconv.Atoi(k)
		a := r.fig(sd, k)
		if err != nil || !a.ok() {
			continue
		}
		xy = append(xy, plotter.XY{X: float64(n), Y: a.median()})
	}
	return xy
}

// chartFor returns the chart of a benchmark, or false if it has none.
func chartFor(r *result, l limits, np int) (chart, bool) {
	s := r.Spec
	var c chart
	switch s.Plot {
	case latencyPlot:
		c = chart{Title: s.Title + " latency (median of rounds)", YLabel: "latency (us)", LogY: true}
	case bandwidthPlot:
		c = chart{Title: s.Title + " (median of rounds)", YLabel: "bandwidth (MB/s)"}
	default:
		return chart{}, false
	}
	c.Lines = append(c.Lines,
		series{Name: "goshmem", XY: sizeSeries(r, gosh)},
		series{Name: "peer (Open MPI OSHMEM)", XY: sizeSeries(r, peer)})
	var lim plotter.XYs
	name := ""
	for _, k := range r.Keys {
		n, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		if v, what, ok := limitFor(s, k, l, np); ok {
			lim = append(lim, plotter.XY{X: float64(n), Y: v})
			name = what
		}
	}
	if len(lim) > 0 {
		c.Lines = append(c.Lines, series{Name: "limit: " + name, XY: lim, Limit: true})
	}
	return c, true
}
