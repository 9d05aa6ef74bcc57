package report

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A chart is geometry for the template to draw as SVG: positions in
// pixels, labels as text. Nothing here is markup.
type chart struct {
	Title string
	// W, H: the SVG's size; L, T, R, B: the plot area's edges.
	W, H, L, T, R, B float64
	XTicks, YTicks   []tick
	XLabel           string
	Lines            []line
	Dots             []dot
	Bars             []bar
	// Marks are vertical lines across the plot (a run's timeout).
	Marks  []mark
	Rows   []rowLabel
	Legend []legendItem
	// Empty, when set, is said instead of the plot.
	Empty string
	// Views, when there are, are drawn each in a group of its own, one
	// shown at a time (curves.go); Class is the SVG's (autolog: the
	// auto y axis is the log one).
	Views []chartView
	Class string
	// Cells are a heat map's (heatmap.go).
	Cells []bar
}

type tick struct {
	Pos   float64
	Label string
}

type line struct {
	Points, Color, Label string
	// Class: raw or "sm smN" for a metric's lines (curves.go).
	Class string
}

type dot struct {
	X, Y, R      float64
	Color, Title string
}

type bar struct {
	X, Y, W, H   float64
	Color, Title string
}

type mark struct {
	X     float64
	Title string
}

type rowLabel struct {
	Y     float64
	Label string
}

type legendItem struct {
	Color, Label string
}

// palette: Tableau 10, told apart by most eyes.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func color(i int) string { return palette[i%len(palette)] }

// named is a series with its legend's label.
type named struct {
	Label string
	Pts   []point
}

// timeAxis maps times to x.
type timeAxis struct {
	t0   time.Time
	span time.Duration
	l, r float64
}

func (a timeAxis) x(t time.Time) float64 {
	if a.span <= 0 {
		return a.l
	}
	f := float64(t.Sub(a.t0)) / float64(a.span)
	return a.l + math.Max(0, math.Min(1, f))*(a.r-a.l)
}

// ticks: at most 9 (0 and up to 8 steps), at round durations from the
// run's start, whatever the span: past a week's steps, whole weeks. The
// i-th tick is i steps, never a sum that could overflow.
func (a timeAxis) ticks() []tick {
	if a.span < 0 {
		return nil
	}
	steps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second,
		2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute,
		2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
		2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, week}
	step := time.Duration(0)
	for _, s := range steps {
		if a.span/s <= 8 {
			step = s
			break
		}
	}
	if step == 0 {
		// span/8 rounded up to whole weeks: span/step <= 8.
		step = (a.span/8/week + 1) * week
	}
	n := int(a.span / step)
	ts := make([]tick, 0, n+1)
	for i := range n + 1 {
		d := time.Duration(i) * step
		ts = append(ts, tick{a.x(a.t0.Add(d)), durLabel(d)})
	}
	return ts
}

const week = 7 * 24 * time.Hour

// durLabel: 0, 500ms, 1.5s, 30s, 1m30s, 2h, 1h30m.
func durLabel(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return d.String()
	case d < time.Minute && d%time.Second != 0:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	d = d.Round(time.Second)
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.unit)
			d -= n * u.d
		}
	}
	return b.String()
}

// valueAxis maps values to y.
type valueAxis struct {
	lo, hi float64
	t, b   float64
	log    bool
}

func (a valueAxis) f(v float64) float64 {
	if a.log {
		v, a.lo, a.hi = math.Log10(v), math.Log10(a.lo), math.Log10(a.hi)
	}
	if a.hi == a.lo {
		return 0.5
	}
	// Halves: the ends of float64 apart do not overflow.
	f := (v/2 - a.lo/2) / (a.hi/2 - a.lo/2)
	if math.IsNaN(f) {
		return 0.5
	}
	return math.Max(0, math.Min(1, f))
}

func (a valueAxis) y(v float64) float64 { return a.b - a.f(v)*(a.b-a.t) }

// finite: neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// niceAxis widens lo..hi to round ticks (about n of them, at most 4n+1)
// and returns them. Whatever lo and hi are (NaN, infinite, the ends of
// float64, equal, lo above hi), the range it returns is finite with lo
// below hi, and its ticks are finite, rising and within it.
func niceAxis(lo, hi float64, n int) (float64, float64, []float64) {
	if !finite(lo) || !finite(hi) || lo > hi {
		lo, hi = 0, 1
	}
	switch {
	case hi == lo && lo == 0:
		hi = 1
	case hi == lo:
		pad := math.Abs(lo) * 0.1
		if lo-pad == lo {
			pad = 1 // a value too small for a tenth of it to count
		}
		l, h := lo-pad, hi+pad
		if !finite(h) {
			l, h = lo-2*pad, hi
		}
		if !finite(l) {
			l, h = lo, hi+2*pad
		}
		lo, hi = l, h
	}
	raw := hi/float64(n) - lo/float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	if !finite(step) || step <= 0 {
		return lo, hi, []float64{lo, hi}
	}
	// Widened to whole steps where that stays finite.
	if l := math.Floor(lo/step) * step; finite(l) {
		lo = l
	}
	if h := math.Ceil(hi/step) * step; finite(h) {
		hi = h
	}
	var vs []float64
	first := math.Ceil(lo/step) * step
	for i := 0; i <= 4*n; i++ {
		v := math.Round((first+float64(i)*step)/step) * step
		if !finite(v) || v > hi {
			break
		}
		if v < lo || len(vs) > 0 && v <= vs[len(vs)-1] {
			continue
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		vs = []float64{lo, hi}
	}
	return lo, hi, vs
}

// frame makes an empty chart of the given size with room for labels on
// the left (left) and ticks below.
func frame(title string, w, h, left float64) chart {
	return chart{Title: title, W: w, H: h, L: left, T: 24, R: w - 12, B: h - 24}
}

// timeChart draws lines over time, from t0 for span; lo..hi is the value
// range (lo > hi: the values'; 0..0: from 0 to the values' largest).
func timeChart(title string, w, h float64, t0 time.Time, span time.Duration, lines []named, lo, hi float64) chart {
	c := frame(title, w, h, 52)
	if lo > hi || lo == 0 && hi == 0 {
		fromZero := lo == 0
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, l := range lines {
			for _, p := range l.Pts {
				if finite(p.v) {
					lo, hi = math.Min(lo, p.v), math.Max(hi, p.v)
				}
			}
		}
		if fromZero && lo >= 0 {
			lo = 0
		}
	}
	var ys []float64
	lo, hi, ys = niceAxis(lo, hi, 4)
	ta := timeAxis{t0: t0, span: span, l: c.L, r: c.R}
	va := valueAxis{lo: lo, hi: hi, t: c.T, b: c.B}
	c.XTicks = ta.ticks()
	for _, v := range ys {
		c.YTicks = append(c.YTicks, tick{va.y(v), numLabel(v)})
	}
	points := 0
	for i, l := range lines {
		// The files' values are finite (load.go): these are
		// the caller's.
		l.Pts = slices.DeleteFunc(slices.Clone(l.Pts), func(p point) bool { return !finite(p.v) })
		var b strings.Builder
		for _, p := range l.Pts {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(xy(ta.x(p.t), va.y(p.v)))
			points++
		}
		c.Lines = append(c.Lines, line{Points: b.String(), Color: color(i), Label: l.Label})
		if len(l.Pts) == 1 {
			// One point draws no line: a dot then.
			c.Dots = append(c.Dots, dot{X: ta.x(l.Pts[0].t), Y: va.y(l.Pts[0].v), R: 4, Color: color(i), Title: l.Label + ": " + numLabel(l.Pts[0].v)})
		}
		c.Legend = append(c.Legend, legendItem{Color: color(i), Label: l.Label})
	}
	if points == 0 {
		c.Empty = "no values"
	}
	return c
}

func xy(x, y float64) string {
	return strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64)
}
