package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
)

// A sweep's report: each captured metric (the run's value of each trial,
// the summary's) against each parameter, and the trials with their
// parameters, result, duration and metrics. The sweep is
// <root>/<name>/sweep.json (record.Sweep); each trial a run of its own,
// <root>/<trial id>/.

// maxTrials is the most trials read.
const maxTrials = 10_000

// Sweep is what the report shows of a sweep.
type Sweep struct {
	Dir    string
	Rec    record.Sweep
	Trials []Trial
	Notes  []string
	// Runs are the first maxCompareRuns trials' runs (one with nothing
	// but its id where the trial has no run dir yet), RunParams their
	// parameters: the curves and the table (compare.go).
	Runs      []*Run
	RunParams []map[string]string
}

// Trial is one trial: its summary, nil when it has none (not run yet,
// going on, or its tfhive was killed).
type Trial struct {
	ID      string
	Params  map[string]string
	Summary *record.Summary
}

// IsSweep says whether dir holds a sweep's record.
func IsSweep(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, rundir.Sweep))
	return err == nil && st.Mode().IsRegular()
}

// LoadSweep reads the sweep in dir (<root>/<name>) and its trials, each
// in root.
func LoadSweep(root, dir string) (*Sweep, error) {
	s := &Sweep{Dir: dir}
	if err := readJSON(filepath.Join(dir, rundir.Sweep), &s.Rec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("sweep.json: %v", why(err))
	}
	trials := s.Rec.Trials
	if len(trials) > maxTrials {
		s.Notes = append(s.Notes, fmt.Sprintf("only the first %d of its %d trials are shown", maxTrials, len(trials)))
		trials = trials[:maxTrials]
	}
	missing := 0
	for _, t := range trials {
		tr := Trial{ID: t.ID, Params: t.Params}
		// A trial is a directory of root: never a path that leads
		// elsewhere.
		if t.ID == "" || t.ID == "." || t.ID == ".." || strings.ContainsAny(t.ID, "/\x00") {
			s.Notes = append(s.Notes, fmt.Sprintf("trial %q: not a run id; passed over", t.ID))
			continue
		}
		var sum record.Summary
		switch err := readJSON(filepath.Join(root, t.ID, rundir.Summary), &sum); {
		case err == nil:
			tr.Summary = &sum
		case errors.Is(err, fs.ErrNotExist):
			missing++
		default:
			s.Notes = append(s.Notes, fmt.Sprintf("%s/summary.json: %v", t.ID, why(err)))
		}
		s.Trials = append(s.Trials, tr)
		if len(s.Runs) < maxCompareRuns {
			r, err := Load(filepath.Join(root, t.ID), t.ID)
			if err != nil {
				r = &Run{ID: t.ID, Dir: filepath.Join(root, t.ID), GPU: map[string]*TaskGPU{}, Metrics: map[string]map[string]*series{}}
			}
			s.Runs, s.RunParams = append(s.Runs, r), append(s.RunParams, t.Params)
		}
	}
	if len(s.Trials) > maxCompareRuns {
		s.Notes = append(s.Notes, fmt.Sprintf("the curves and the table show the first %d trials", maxCompareRuns))
	}
	if missing > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d trials have no summary yet (not run, going on, or their tfhive was killed)", missing))
	}
	return s, nil
}

// sweepPage is what the template shows of a sweep.
type sweepPage struct {
	Title  string
	Head   []kv
	Notes  []string
	Charts []chart
	// Metrics: each trial's curves (compare.go).
	Metrics []chart
	HasStep bool
	Trials  sortTable
	Record  []kv
}

// WriteSweep renders s's report.
func WriteSweep(w io.Writer, s *Sweep) error {
	p := sweepPage{Title: "tfhive sweep " + s.Rec.Name, Notes: s.Notes}
	results := map[string]int{}
	for _, t := range s.Trials {
		res := "no summary"
		if t.Summary != nil {
			res = t.Summary.Result
		}
		results[res]++
	}
	p.Head = append(p.Head, kv{"trials", strconv.Itoa(len(s.Rec.Trials))})
	for _, r := range slices.Sorted(maps.Keys(results)) {
		p.Head = append(p.Head, kv{r, strconv.Itoa(results[r])})
	}
	names := map[string]bool{}
	for _, t := range s.Trials {
		if t.Summary != nil {
			for k := range t.Summary.Metrics {
				names[k] = true
			}
		}
	}
	metrics := slices.Sorted(maps.Keys(names))
	for _, m := range metrics {
		if !s.anyNumber(m) {
			continue // a word, as "n/a": in the table only
		}
		for _, par := range s.Rec.Params {
			by := ""
			for _, o := range s.Rec.Params {
				if o.Name != par.Name {
					by = o.Name
					break
				}
			}
			p.Charts = append(p.Charts, s.paramChart(m, par, by))
		}
	}
	c := &Comparison{}
	c.fromSweep(s)
	c.Best = c.defaultBest()
	best, _ := c.bestRun()
	p.Metrics, p.HasStep = c.overlay()
	p.Trials = c.table(best)
	p.Record = []kv{{"sweep", s.Rec.Name}, {"dir", s.Dir}, {"command", view.CommandLine(s.Rec.Command)}}
	for _, par := range s.Rec.Params {
		p.Record = append(p.Record, kv{"--param " + par.Name, strings.Join(par.Values, ",")})
	}
	if s.Rec.Random > 0 {
		p.Record = append(p.Record, kv{"--random", fmt.Sprintf("%d (seed %d)", s.Rec.Random, s.Rec.Seed)})
	}
	return page.ExecuteTemplate(w, "sweep", p)
}

// paramChart draws metric m of every trial against parameter par: on a
// number line when every value is a number (logarithmic when they are
// positive and span tenfold or more, as learning rates and batch sizes
// do: bs 16 and 32 apart, not one on the other beside 1024), else one
// place per value in the order given; each dot coloured by the first
// other parameter (colourBy, "" for none).
func (s *Sweep) paramChart(m string, par record.SweepParam, colourBy string) chart {
	c := frame(m+" against "+par.Name, 640, 240, 60)
	c.XLabel = par.Name
	type pt struct {
		x, y         float64
		title, color string
	}
	cmp := &Comparison{ColorBy: colourBy}
	for _, t := range s.Trials {
		cmp.Params = append(cmp.Params, t.Params)
	}
	var pts []pt
	numeric, positive := true, true
	xs := map[string]float64{}
	for _, v := range par.Values {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			numeric = false
		}
		positive = positive && f > 0
		xs[v] = f
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range s.Trials {
		if t.Summary == nil {
			continue
		}
		y, err := strconv.ParseFloat(t.Summary.Metrics[m], 64)
		v, ok := t.Params[par.Name]
		if err != nil || !ok || math.IsNaN(y) || math.IsInf(y, 0) || !slices.Contains(par.Values, v) {
			continue
		}
		x := float64(slices.Index(par.Values, v))
		if numeric {
			x = xs[v]
		}
		title, col := fmt.Sprintf("%s: %s=%s, %s=%s", t.ID, par.Name, v, m, t.Summary.Metrics[m]), color(0)
		if colourBy != "" {
			title += ", " + colourBy + "=" + t.Params[colourBy]
			col = cmp.valueColor(t.Params[colourBy])
		}
		pts = append(pts, pt{x, y, title, col})
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	if len(pts) == 0 {
		c.Empty = "no trial has a number for " + m
		return c
	}
	// Room above and below: a dot on the axis is half hidden by it.
	// (Each end's share, and only while it stays finite: values at the
	// ends of float64 have no room.)
	pad := hi*0.08 - lo*0.08
	if l, h := lo-pad, hi+pad; finite(l) && finite(h) {
		lo, hi = l, h
	}
	var ys []float64
	lo, hi, ys = niceAxis(lo, hi, 4)
	va := valueAxis{lo: lo, hi: hi, t: c.T, b: c.B}
	for _, v := range ys {
		c.YTicks = append(c.YTicks, tick{va.y(v), numLabel(v)})
	}
	// The x axis: numbers, or places with room at both ends.
	xa := valueAxis{lo: -0.5, hi: float64(len(par.Values)) - 0.5}
	if numeric {
		xa.lo, xa.hi = slices.Min(slices.Collect(maps.Values(xs))), slices.Max(slices.Collect(maps.Values(xs)))
		xa.log = positive && xa.lo > 0 && xa.hi/xa.lo >= 10
		if xa.lo == xa.hi {
			xa.lo, xa.hi = xa.lo-1, xa.hi+1
			xa.log = false
		}
	}
	const edge = 16.0
	xpos := func(x float64) float64 { return c.L + edge + xa.f(x)*(c.R-c.L-2*edge) }
	if numeric {
		for _, v := range par.Values {
			c.XTicks = append(c.XTicks, tick{xpos(xs[v]), v})
		}
	} else {
		for i, v := range par.Values {
			c.XTicks = append(c.XTicks, tick{xpos(float64(i)), v})
		}
	}
	for _, p := range pts {
		c.Dots = append(c.Dots, dot{X: xpos(p.x), Y: va.y(p.y), R: 6, Color: p.color, Title: p.title})
	}
	if colourBy != "" {
		for _, v := range cmp.colorValues() {
			c.Legend = append(c.Legend, legendItem{Color: cmp.valueColor(v), Label: colourBy + "=" + v})
		}
	}
	return c
}

// anyNumber: some trial's metric m is a number.
func (s *Sweep) anyNumber(m string) bool {
	for _, t := range s.Trials {
		if t.Summary == nil {
			continue
		}
		if v, err := strconv.ParseFloat(t.Summary.Metrics[m], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return true
		}
	}
	return false
}
