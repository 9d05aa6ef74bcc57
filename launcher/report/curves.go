package report

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// A metric's chart, as TensorBoard draws a scalar: against the step when
// the capture names one (a step row beside each value, launcher/capture.go),
// else against the time from the run's start; on a logarithmic axis when
// its values span more than two decades (a loss from 13 to 0.0004), and
// smoothed on demand (TensorBoard's debiased EMA). The page runs no script
// (its CSP), so every view is drawn and the page's radio buttons show one
// by CSS alone (report.html.tmpl): x by step or time, y auto, linear or
// log, smoothing off, 0.6, 0.9 or 0.99, the raw line faint behind the
// smoothed one.

// stepName is the metric that is each value's step (launcher/capture.go
// records a step group's matches under it).
const stepName = "step"

// smoothings are the EMA weights offered; 0 is off.
var smoothings = []struct {
	W     float64
	Class string
}{{0.6, "sm6"}, {0.9, "sm9"}, {0.99, "sm99"}}

// maxSmoothPoints: a smoothed line has no detail a pixel needs more of.
const maxSmoothPoints = 300

// chartView is one of a chart's views: its axes and lines, shown by the
// page's radio buttons through Class (xs or xt, ylin or ylog; both of a
// pair when the chart has only one, as a metric without steps).
type chartView struct {
	Class, XLabel  string
	XTicks, YTicks []tick
	Lines          []line
	Dots           []dot
}

// curve is one line of a metric chart: a task's or a run's series.
type curve struct {
	Label, Color string
	// Pts in time order; Steps, when not nil, each point's step.
	Pts   []point
	Steps []float64
	// T0 is the curve's time zero (its run's start).
	T0 time.Time
}

// metricChart draws curves over span (the time axis' length).
func metricChart(title string, w, h float64, curves []curve, span time.Duration) chart {
	c := frame(title, w, h, 60)
	lo, hi := math.Inf(1), math.Inf(-1)
	hasStep, points := false, 0
	for i := range curves {
		cv := &curves[i]
		if cv.Color == "" {
			cv.Color = color(i)
		}
		for _, p := range cv.Pts {
			lo, hi = math.Min(lo, p.v), math.Max(hi, p.v)
		}
		points += len(cv.Pts)
		hasStep = hasStep || cv.Steps != nil
		c.Legend = append(c.Legend, legendItem{Color: cv.Color, Label: cv.Label})
	}
	if points == 0 {
		c.Empty = "no values"
		return c
	}
	canLog := lo > 0
	if canLog && hi/lo > 100 {
		c.Class = "autolog"
	}
	smooth := make([][][]float64, len(curves))
	for i, cv := range curves {
		for _, s := range smoothings {
			smooth[i] = append(smooth[i], ema(cv.Pts, s.W))
		}
	}
	xs := []string{"xt"}
	if hasStep {
		xs = append(xs, "xs")
	}
	ys := []string{"ylin"}
	if canLog {
		ys = append(ys, "ylog")
	}
	for _, x := range xs {
		for _, y := range ys {
			cls := x
			if !hasStep {
				cls += " xs"
			}
			cls += " " + y
			if !canLog {
				cls += " ylog"
			}
			c.Views = append(c.Views, c.metricView(cls, x == "xs", y == "ylog", curves, smooth, span, lo, hi))
		}
	}
	return c
}

// metricView is one view of a metric chart.
func (c *chart) metricView(cls string, byStep, log bool, curves []curve, smooth [][][]float64, span time.Duration, lo, hi float64) chartView {
	v := chartView{Class: cls, XLabel: "time from the run's start"}
	if byStep {
		v.XLabel = "step"
	}
	va := valueAxis{t: c.T, b: c.B, log: log}
	if log {
		var ys []float64
		va.lo, va.hi, ys = logAxis(lo, hi)
		for _, y := range ys {
			v.YTicks = append(v.YTicks, tick{va.y(y), numLabel(y)})
		}
	} else {
		var ys []float64
		va.lo, va.hi, ys = niceAxis(lo, hi, 4)
		for _, y := range ys {
			v.YTicks = append(v.YTicks, tick{va.y(y), numLabel(y)})
		}
	}
	var x func(cv curve, i int) float64
	if byStep {
		slo, shi := math.Inf(1), math.Inf(-1)
		for _, cv := range curves {
			for _, s := range cv.Steps {
				slo, shi = math.Min(slo, s), math.Max(shi, s)
			}
		}
		if slo > 0 && slo <= shi {
			slo = 0 // steps from 0, as TensorBoard's axis
		}
		var ticks []float64
		slo, shi, ticks = niceAxis(slo, shi, 6)
		xa := valueAxis{lo: slo, hi: shi}
		for _, s := range ticks {
			v.XTicks = append(v.XTicks, tick{c.L + xa.f(s)*(c.R-c.L), numLabel(s)})
		}
		x = func(cv curve, i int) float64 {
			if cv.Steps == nil {
				return math.NaN()
			}
			return c.L + xa.f(cv.Steps[i])*(c.R-c.L)
		}
	} else {
		zero := time.Unix(0, 0)
		ta := timeAxis{t0: zero, span: span, l: c.L, r: c.R}
		v.XTicks = ta.ticks()
		x = func(cv curve, i int) float64 { return ta.x(zero.Add(cv.Pts[i].t.Sub(cv.T0))) }
	}
	for i, cv := range curves {
		var raw strings.Builder
		n := 0
		for j, p := range cv.Pts {
			if px := x(cv, j); finite(px) {
				addXY(&raw, px, va.y(p.v))
				n++
			}
		}
		if n == 0 {
			continue
		}
		if n == 1 {
			for j, p := range cv.Pts {
				if px := x(cv, j); finite(px) {
					v.Dots = append(v.Dots, dot{X: px, Y: va.y(p.v), R: 4, Color: cv.Color, Title: cv.Label + ": " + numLabel(p.v)})
				}
			}
		}
		v.Lines = append(v.Lines, line{Points: raw.String(), Color: cv.Color, Label: cv.Label, Class: "raw"})
		for k, s := range smoothings {
			var b strings.Builder
			sm := smooth[i][k]
			every := max(1, (len(sm)+maxSmoothPoints-1)/maxSmoothPoints)
			for j := range sm {
				if j%every != 0 && j != len(sm)-1 {
					continue
				}
				if px := x(cv, j); finite(px) {
					addXY(&b, px, va.y(sm[j]))
				}
			}
			v.Lines = append(v.Lines, line{Points: b.String(), Color: cv.Color, Label: cv.Label + " (smoothed " + numLabel(s.W) + ")", Class: "sm " + s.Class})
		}
	}
	return v
}

func addXY(b *strings.Builder, x, y float64) {
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(xy(x, y))
}

// ema is TensorBoard's smoothing: an exponential moving average with
// weight w, debiased so that its first points are not pulled to 0.
func ema(pts []point, w float64) []float64 {
	out := make([]float64, len(pts))
	last, n := 0.0, 0
	for i, p := range pts {
		n++
		last = last*w + (1-w)*p.v
		out[i] = last / (1 - math.Pow(w, float64(n)))
	}
	return out
}

// logAxis widens lo..hi (both above 0) to powers of ten and returns its
// ticks: each decade, every 2nd or more past eight of them; within less
// than a decade, 1, 2 and 5 of each.
func logAxis(lo, hi float64) (float64, float64, []float64) {
	if !(lo > 0) || !finite(hi) || lo > hi {
		return 1, 10, []float64{1, 10}
	}
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if a == b {
		b = a + 1
	}
	// Beyond float64's range of powers: keep the ends.
	if a < -307 || b > 307 {
		return lo, hi, []float64{lo, hi}
	}
	step := math.Ceil((b - a) / 8)
	var ts []float64
	for e := a; e <= b; e += step {
		ts = append(ts, math.Pow(10, e))
	}
	if b-a == 1 {
		ts = []float64{}
		for _, m := range []float64{1, 2, 5, 10} {
			ts = append(ts, m*math.Pow(10, a))
		}
	}
	return math.Pow(10, a), math.Pow(10, b), ts
}

// stepsOf pairs each of pts with the step nearest it in time (a step
// row is written just before or after its value's), nil when steps is
// empty.
func stepsOf(pts, steps []point) []float64 {
	if len(steps) == 0 {
		return nil
	}
	steps = slices.Clone(steps)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].t.Before(steps[j].t) })
	out := make([]float64, len(pts))
	for i, p := range pts {
		k := sort.Search(len(steps), func(j int) bool { return !steps[j].t.Before(p.t) })
		switch {
		case k == len(steps):
			k--
		case k > 0 && p.t.Sub(steps[k-1].t) <= steps[k].t.Sub(p.t):
			k--
		}
		out[i] = steps[k].v
	}
	return out
}

// hasStep: some view of c is by step alone.
func (c chart) hasStep() bool {
	for _, v := range c.Views {
		if strings.HasPrefix(v.Class, "xs") {
			return true
		}
	}
	return false
}
