package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
)

// `tfhive compare RUN RUN… | SWEEP`: every run's captured metrics
// overlaid, a curve per run (by step or by the time from its own start,
// as TensorBoard's "relative"), a sortable table of their parameters and
// results, the best run marked. A sweep's trials are coloured by a
// parameter (the first --param, or --color-by). A sweep's own report has
// the same curves and table (sweep.go).
//
// Decisions:
//   - A run's curve of a metric is one task's: the chief's, else worker
//     0's, else the first task's that has it, as the run's value is
//     chosen (launcher.RunMetrics); the table shows the run's value
//     (summary.json's).
//   - The best run is by --best 'NAME [min|max]'; without it, by the
//     first --capture of the first run that has one (its order on the
//     command line), lowest when its name holds loss or err, else
//     highest. Runs whose value is no number are never best.
//   - At most maxCompareRuns runs are drawn (a sweep's first); the rest
//     are said.

const maxCompareRuns = 100

// Best is how the best run is chosen: by Metric, lowest when Min.
type Best struct {
	Metric string
	Min    bool
}

// ParseBest reads --best 'NAME [min|max]'.
func ParseBest(s string) (Best, error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return Best{}, fmt.Errorf("--best %q: want a metric and min or max, as 'loss min'", s)
	}
	b := Best{Metric: f[0], Min: lowerIsBetter(f[0])}
	if len(f) == 2 {
		switch f[1] {
		case "min":
			b.Min = true
		case "max":
			b.Min = false
		default:
			return Best{}, fmt.Errorf("--best %q: %q is neither min nor max", s, f[1])
		}
	}
	return b, nil
}

// lowerIsBetter: a loss or an error rate.
func lowerIsBetter(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "loss") || strings.Contains(n, "err")
}

// Comparison is what compare shows.
type Comparison struct {
	Title string
	// Runs, each with its parameters (a sweep's trial's; nil for a run
	// of its own).
	Runs   []*Run
	Params []map[string]string
	// ParamNames are the parameters' names in order; ColorBy the one
	// the curves are coloured by ("": a colour per run).
	ParamNames []string
	ColorBy    string
	Best       Best
	Notes      []string
	Record     []kv
}

// LoadComparison reads the runs named in root: one sweep's trials, or
// runs. A name that is no run: fs.ErrNotExist, wrapped with it.
func LoadComparison(root string, names []string) (*Comparison, error) {
	c := &Comparison{}
	if len(names) == 1 && IsSweep(filepath.Join(root, names[0])) {
		s, err := LoadSweep(root, filepath.Join(root, names[0]))
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", names[0], err)
		}
		c.Title = "tfhive compare: sweep " + s.Rec.Name
		c.Notes = s.Notes
		c.fromSweep(s)
		return c, nil
	}
	c.Title = "tfhive compare: " + strings.Join(names, ", ")
	for _, n := range names {
		r, err := Load(filepath.Join(root, n), n)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &MissingError{Name: n}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		c.Runs = append(c.Runs, r)
		c.Params = append(c.Params, nil)
	}
	return c, nil
}

// fromSweep takes s's trials that have a run dir.
func (c *Comparison) fromSweep(s *Sweep) {
	for _, p := range s.Rec.Params {
		c.ParamNames = append(c.ParamNames, p.Name)
	}
	if len(c.ParamNames) > 0 {
		c.ColorBy = c.ParamNames[0]
	}
	c.Runs, c.Params = s.Runs, s.RunParams
	c.Record = append(c.Record, kv{"sweep", s.Rec.Name}, kv{"dir", s.Dir}, kv{"command", view.CommandLine(s.Rec.Command)})
}

// defaultBest is the first --capture of the first run with one.
func (c *Comparison) defaultBest() Best {
	for _, r := range c.Runs {
		if r.Repro == nil {
			continue
		}
		args := r.Repro.Args
		for i, a := range args {
			var spec string
			switch {
			case a == "--":
				i = len(args)
			case (a == "--capture" || a == "-capture") && i+1 < len(args):
				spec = args[i+1]
			case strings.HasPrefix(a, "--capture="):
				spec = strings.TrimPrefix(a, "--capture=")
			}
			if name, _, ok := strings.Cut(spec, "="); ok && name != stepName {
				return Best{Metric: name, Min: lowerIsBetter(name)}
			}
		}
	}
	// Else a loss (or an error rate) that is a number, else the first
	// metric that is.
	var numeric []string
	for _, n := range c.metricNames() {
		if c.anyNumber(n) {
			numeric = append(numeric, n)
		}
	}
	if len(numeric) == 0 {
		return Best{}
	}
	slices.SortStableFunc(numeric, func(a, b string) int { return boolInt(!lowerIsBetter(a)) - boolInt(!lowerIsBetter(b)) })
	return Best{Metric: numeric[0], Min: lowerIsBetter(numeric[0])}
}

// anyNumber: some run's value of metric m is a number.
func (c *Comparison) anyNumber(m string) bool {
	for _, r := range c.Runs {
		if r.Summary == nil {
			continue
		}
		if v, err := strconv.ParseFloat(r.Summary.Metrics[m], 64); err == nil && finite(v) {
			return true
		}
	}
	return false
}

// metricNames are every run's summary metrics, sorted.
func (c *Comparison) metricNames() []string {
	set := map[string]bool{}
	for _, r := range c.Runs {
		if r.Summary != nil {
			for k := range r.Summary.Metrics {
				set[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// bestRun is the index of the best run, -1 for none.
func (c *Comparison) bestRun() (int, float64) {
	best, bv := -1, 0.0
	for i, r := range c.Runs {
		if r.Summary == nil || c.Best.Metric == "" {
			continue
		}
		v, err := strconv.ParseFloat(r.Summary.Metrics[c.Best.Metric], 64)
		if err != nil || !finite(v) {
			continue
		}
		if best < 0 || c.Best.Min && v < bv || !c.Best.Min && v > bv {
			best, bv = i, v
		}
	}
	return best, bv
}

// comparePage is what the template shows.
type comparePage struct {
	Title   string
	Head    []kv
	Notes   []string
	Metrics []chart
	HasStep bool
	Table   sortTable
	Record  []kv
}

// WriteCompare renders c.
func WriteCompare(w io.Writer, c *Comparison) error {
	if c.Best.Metric == "" {
		c.Best = c.defaultBest()
	}
	p := comparePage{Title: c.Title, Notes: c.Notes, Record: c.Record}
	p.Head = append(p.Head, kv{"runs", strconv.Itoa(len(c.Runs))})
	best, bv := c.bestRun()
	if best >= 0 {
		way := "highest"
		if c.Best.Min {
			way = "lowest"
		}
		p.Head = append(p.Head, kv{"best", fmt.Sprintf("%s: %s %s (%s)", c.Runs[best].ID, c.Best.Metric, numLabel(bv), way)})
	} else if c.Best.Metric != "" {
		p.Notes = append(p.Notes, fmt.Sprintf("no run has a number for %s: none is marked best", c.Best.Metric))
	}
	if c.ColorBy != "" {
		p.Head = append(p.Head, kv{"colour", "by " + c.ColorBy})
	}
	p.Metrics, p.HasStep = c.overlay()
	p.Table = c.table(best)
	for _, r := range c.Runs {
		cmd := ""
		if r.Repro != nil {
			cmd = view.CommandLine(append([]string{"tfhive"}, redactEnv(r.Repro.Args)...))
		}
		p.Record = append(p.Record, kv{r.ID, strings.TrimSpace(r.Dir + "\n" + cmd)})
	}
	return page.ExecuteTemplate(w, "compare", p)
}

// overlay is a chart per metric, a curve per run.
func (c *Comparison) overlay() ([]chart, bool) {
	colors := c.colors()
	names := map[string]bool{}
	var span time.Duration
	for _, r := range c.Runs {
		for _, n := range r.metricNames() {
			names[n] = true
		}
		t0, s := r.span()
		for _, m := range r.Metrics {
			for _, sr := range m {
				if pts := sr.points(); len(pts) > 0 {
					s = max(s, pts[len(pts)-1].t.Sub(t0))
				}
			}
		}
		span = max(span, s)
	}
	var charts []chart
	hasStep := false
	for _, name := range slices.Sorted(maps.Keys(names)) {
		var curves []curve
		var legend []legendItem
		for i, r := range c.Runs {
			id := r.curveTask(name)
			if id == "" {
				continue
			}
			t0, _ := r.span()
			label := r.ID
			if c.ColorBy != "" {
				label += " (" + c.ColorBy + "=" + c.Params[i][c.ColorBy] + ")"
			}
			cv := r.curve(name, id, label, t0)
			cv.Color = colors[i]
			curves = append(curves, cv)
		}
		ch := metricChart(name, 960, 300, curves, span)
		if c.ColorBy != "" {
			for _, v := range c.colorValues() {
				legend = append(legend, legendItem{Color: c.valueColor(v), Label: c.ColorBy + "=" + v})
			}
			ch.Legend = legend
		}
		hasStep = hasStep || ch.hasStep()
		charts = append(charts, ch)
	}
	return charts, hasStep
}

// curveTask is the task whose series of metric name is the run's.
func (r *Run) curveTask(name string) string {
	m := r.Metrics[name]
	for _, id := range []string{"chief:0", "worker:0"} {
		if m[id] != nil {
			return id
		}
	}
	if ids := r.orderedKeys(m); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// colorValues are ColorBy's values, numbers in order, else as first met.
func (c *Comparison) colorValues() []string {
	var vs []string
	for _, p := range c.Params {
		if v, ok := p[c.ColorBy]; ok && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	slices.SortStableFunc(vs, func(a, b string) int { return cmpCells(a, b, false) })
	return vs
}

// ramp: dark blue to yellow (viridis' ends and between), for ordered
// values past the palette's ten.
var ramp = []string{"#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"}

// valueColor is ColorBy's value v's colour: the palette's for up to ten
// values, else a place on the ramp by rank.
func (c *Comparison) valueColor(v string) string {
	vs := c.colorValues()
	i := slices.Index(vs, v)
	if len(vs) <= len(palette) {
		return color(max(0, i))
	}
	return ramp[int(math.Round(float64(max(0, i))/float64(len(vs)-1)*float64(len(ramp)-1)))]
}

func (c *Comparison) colors() []string {
	out := make([]string, len(c.Runs))
	for i := range c.Runs {
		if c.ColorBy != "" {
			out[i] = c.valueColor(c.Params[i][c.ColorBy])
		} else {
			out[i] = color(i)
		}
	}
	return out
}

// table is the runs' table, sorted by the best metric, best first.
func (c *Comparison) table(best int) sortTable {
	metrics := c.metricNames()
	head := append(append([]string{"", "run"}, c.ParamNames...), "result", "exit", "duration")
	if len(c.ParamNames) == 0 {
		head = append(head, "command")
	}
	head = append(head, metrics...)
	var rows [][]string
	for i, r := range c.Runs {
		row := []string{"", r.ID}
		if i == best {
			row[0] = "★"
		}
		for _, n := range c.ParamNames {
			row = append(row, c.Params[i][n])
		}
		if s := r.Summary; s != nil {
			row = append(row, s.Result, strconv.Itoa(s.ExitCode), s.Duration.Round(100*time.Millisecond).String())
		} else {
			row = append(row, "-", "-", "-")
		}
		if len(c.ParamNames) == 0 {
			row = append(row, r.taskCommand())
		}
		for _, m := range metrics {
			v := ""
			if r.Summary != nil {
				v = r.Summary.Metrics[m]
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	t := newSortTable(head, rows, best)
	if j := slices.Index(head, c.Best.Metric); j >= 0 && c.Best.Metric != "" {
		t.Sorted, t.Desc = j, !c.Best.Min
	}
	return t
}

// taskCommand is the run's task command, as the plan has it (the
// first task's).
func (r *Run) taskCommand() string {
	if r.Plan == nil || len(r.Plan.Tasks) == 0 {
		return "-"
	}
	return view.CommandLine(r.Plan.Tasks[0].Argv)
}

// MissingError is LoadComparison's for a name that is no run.
type MissingError struct{ Name string }

func (e *MissingError) Error() string { return "no run or sweep " + e.Name }

func (e *MissingError) Unwrap() error { return fs.ErrNotExist }
