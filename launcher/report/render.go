package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
)

//go:embed report.html.tmpl
var files embed.FS

var page = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"f1": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
}).ParseFS(files, "report.html.tmpl"))

// maxEventRows is the most events listed under the timeline.
const maxEventRows = 1000

// kv is a labelled value.
type kv struct{ K, V string }

// runPage is what the template shows of a run.
type runPage struct {
	Title    string
	Head     []kv
	Notes    []string
	Chart    chart
	More     int // tasks left out of the timeline and GPU charts
	Events   []eventRow
	EvMore   int
	GPU      []gpuPanel
	Heat     chart
	HeatMore int
	Metrics  []chart
	// HasStep: some metric has steps (the step axis' button).
	HasStep bool
	Tasks   taskTable
	Intr    [][]string
	Record  []kv
}

type eventRow struct{ At, Task, Host, Kind, Detail string }

type gpuPanel struct {
	Task      string
	Util, Mem chart
}

type taskTable struct {
	Head []string
	Rows [][]string
}

// Write renders r's report.
func Write(w io.Writer, r *Run) error {
	t0, span := r.span()
	p := runPage{Title: "tfhive run " + r.ID, Notes: r.Notes, Record: r.record()}
	p.Head = r.head()
	p.Chart, p.More = timelineChart(r, t0, span)
	for i, e := range r.Events {
		if i == maxEventRows {
			p.EvMore = len(r.Events) - i
			break
		}
		p.Events = append(p.Events, eventRow{At: durLabel(e.Time.Sub(t0).Round(100 * time.Millisecond)),
			Task: e.Task, Host: e.Host, Kind: e.Kind, Detail: e.Detail})
	}
	for _, id := range r.taskIDs() {
		g := r.GPU[id]
		if g == nil {
			continue
		}
		if len(p.GPU) == maxTaskRows {
			break
		}
		label := id + " on " + hostOf(r, id)
		p.GPU = append(p.GPU, gpuPanel{Task: label,
			Util: timeChart("GPU utilisation (%)", 460, 170, t0, span, gpuLines(g.Util), 0, 100),
			Mem:  memChart(t0, span, gpuLines(g.Mem))})
	}
	if len(p.GPU) > 0 {
		p.Heat, p.HeatMore = gpuHeatmap(r, t0, span)
	}
	for _, name := range r.metricNames() {
		var curves []curve
		for _, id := range r.orderedKeys(r.Metrics[name]) {
			curves = append(curves, r.curve(name, id, id, t0))
		}
		c := metricChart(name, 960, 260, curves, span)
		p.HasStep = p.HasStep || c.hasStep()
		p.Metrics = append(p.Metrics, c)
	}
	p.Tasks = r.taskTable()
	p.Intr = r.intruders(t0)
	return page.ExecuteTemplate(w, "run", p)
}

// metricNames are the metrics to chart: all but step when it is the
// axis.
func (r *Run) metricNames() []string {
	return slices.DeleteFunc(slices.Sorted(maps.Keys(r.Metrics)), func(n string) bool { return n == stepName && len(r.Metrics) > 1 })
}

// curve is metric name of task id, labelled label, with the task's steps.
func (r *Run) curve(name, id, label string, t0 time.Time) curve {
	pts := r.Metrics[name][id].points()
	cv := curve{Label: label, Pts: pts, T0: t0}
	if name != stepName {
		if st := r.Metrics[stepName][id]; st != nil {
			cv.Steps = stepsOf(pts, st.points())
		}
	}
	return cv
}

// memChart is a task's GPU memory over time, in GiB once there is a GiB
// or more (never 6e+04 MiB).
func memChart(t0 time.Time, span time.Duration, lines []named) chart {
	peak := 0.0
	for _, l := range lines {
		for _, p := range l.Pts {
			peak = max(peak, p.v)
		}
	}
	if peak < 1024 {
		return timeChart("GPU memory used (MiB)", 460, 170, t0, span, lines, 0, 0)
	}
	gib := make([]named, len(lines))
	for i, l := range lines {
		gib[i] = named{Label: l.Label}
		for _, p := range l.Pts {
			gib[i].Pts = append(gib[i].Pts, point{p.t, p.v / 1024})
		}
	}
	return timeChart("GPU memory used (GiB)", 460, 170, t0, span, gib, 0, 0)
}

// span is the run's time: from its start (the summary's, else the first
// time any file has) to its end (the summary's, else the last time).
func (r *Run) span() (time.Time, time.Duration) {
	var first, last time.Time
	see := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for _, e := range r.Events {
		see(e.Time)
	}
	for _, g := range r.GPU {
		for _, s := range g.Util {
			for _, p := range s.points() {
				see(p.t)
			}
		}
	}
	for _, m := range r.Metrics {
		for _, s := range m {
			for _, p := range s.points() {
				see(p.t)
			}
		}
	}
	if r.Summary != nil && !r.Summary.Started.IsZero() {
		return r.Summary.Started, max(r.Summary.Duration, last.Sub(r.Summary.Started))
	}
	return first, last.Sub(first)
}

// orderedKeys are m's task ids in the run's order, then the others
// sorted.
func (r *Run) orderedKeys(m map[string]*series) []string {
	var ids []string
	for _, id := range r.taskIDs() {
		if m[id] != nil {
			ids = append(ids, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func gpuLines(m map[int]*series) []named {
	var lines []named
	for _, g := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, named{Label: "GPU " + strconv.Itoa(g), Pts: m[g].points()})
	}
	return lines
}

func (r *Run) head() []kv {
	s := r.Summary
	if s == nil {
		return []kv{{"result", "unknown (no summary: the run goes on, or its tfhive was killed)"}}
	}
	h := []kv{{"result", s.Result}, {"exit code", strconv.Itoa(s.ExitCode)}}
	if s.Reason != "" {
		h = append(h, kv{"reason", s.Reason})
	}
	h = append(h, kv{"started", s.Started.Format("2006-01-02 15:04:05 MST")},
		kv{"duration", s.Duration.Round(100 * time.Millisecond).String()})
	for _, k := range slices.Sorted(maps.Keys(s.Metrics)) {
		h = append(h, kv{k, s.Metrics[k]})
	}
	return h
}

// record is the run's record: command, hosts, code.
func (r *Run) record() []kv {
	var rec []kv
	rec = append(rec, kv{"run id", r.ID}, kv{"log dir", r.Dir})
	if rp := r.Repro; rp != nil {
		rec = append(rec, kv{"tfhive command", view.CommandLine(append([]string{"tfhive"}, redactEnv(rp.Args)...))})
		if rp.RerunOf != "" {
			rec = append(rec, kv{"a rerun of", rp.RerunOf})
		}
		rec = append(rec, kv{"tfhive version", rp.Version}, kv{"launch dir", rp.LaunchDir}, kv{"hosts from", rp.HostsFrom})
		if g := rp.Git; g != nil {
			commit := g.Commit
			if g.Dirty != nil && *g.Dirty {
				commit += " (with changes not committed)"
			}
			rec = append(rec, kv{"git commit", commit})
		}
		if c := rp.Code; c != nil {
			rec = append(rec, kv{"--sync tree", c.Dir + " (" + c.Hash + ")"})
		}
		for _, h := range rp.Hosts {
			var v []string
			for _, x := range []struct{ k, v string }{{"driver", h.Driver}, {"CUDA", h.CUDA}, {"Python", h.Python}} {
				if x.v != "" {
					v = append(v, x.k+" "+x.v)
				}
			}
			if len(v) > 0 {
				rec = append(rec, kv{"versions on " + h.Name, strings.Join(v, ", ")})
			}
		}
	}
	if p := r.Plan; p != nil {
		rec = append(rec, kv{"framework", strings.TrimSpace(p.Framework + " " + p.Strategy)})
		// One line per distinct command, with the tasks that run it.
		var cmds []string
		by := map[string][]string{}
		hosts := map[string][]string{}
		var hostOrder []string
		for _, t := range p.Tasks {
			c := view.CommandLine(t.Argv)
			if by[c] == nil {
				cmds = append(cmds, c)
			}
			by[c] = append(by[c], t.ID)
			if hosts[t.Host] == nil {
				hostOrder = append(hostOrder, t.Host)
			}
			hosts[t.Host] = append(hosts[t.Host], t.ID+gpuList(t.GPUs))
		}
		for _, c := range cmds {
			k := "command"
			if len(cmds) > 1 {
				k = "command of " + strings.Join(by[c], ", ")
			}
			rec = append(rec, kv{k, c})
		}
		for _, h := range hostOrder {
			rec = append(rec, kv{"host " + h, strings.Join(hosts[h], ", ")})
		}
		for _, b := range p.Reservations {
			v := fmt.Sprintf("%s's %s on %s: GPUs %s, %s to %s", b.User, b.ID, b.Host, view.IntList(b.GPUs),
				b.From.Local().Format("2006-01-02 15:04:05"), b.Until.Local().Format("2006-01-02 15:04:05 MST"))
			if b.Note != "" {
				v += " (" + b.Note + ")"
			}
			// Host, user and note come from a file name on the host,
			// which anyone may have made by hand: shown inert.
			rec = append(rec, kv{"in reservation", view.SanitizeCell(v)})
		}
	}
	if s := r.Summary; s != nil {
		if c := s.Code; c != nil {
			rec = append(rec, kv{"code (--sync)", fmt.Sprintf("%s: %d files, %d bytes, sent to %d of %d hosts", c.Hash, c.Files, c.Bytes, c.Sent, len(c.Hosts))})
		}
		for _, k := range slices.Sorted(maps.Keys(s.Captures)) {
			rec = append(rec, kv{"--capture " + k, s.Captures[k]})
		}
	}
	return rec
}

func gpuList(gpus []int) string {
	if len(gpus) == 0 {
		return ""
	}
	var s []string
	for _, g := range gpus {
		s = append(s, strconv.Itoa(g))
	}
	return " (GPU " + strings.Join(s, ",") + ")"
}

// redactEnv hides --env's values: a report is made to be passed on,
// and a token given as --env K=V must not go with it.
func redactEnv(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch {
		case (a == "--env" || a == "-env") && i+1 < len(out):
			if k, _, ok := strings.Cut(out[i+1], "="); ok {
				out[i+1] = k + "=…"
			}
		case strings.HasPrefix(a, "--env=") || strings.HasPrefix(a, "-env="):
			flag, kv, _ := strings.Cut(a, "=")
			if k, _, ok := strings.Cut(kv, "="); ok {
				out[i] = flag + "=" + k + "=…"
			}
		}
	}
	return out
}

// taskTable is the summary's table.
func (r *Run) taskTable() taskTable {
	s := r.Summary
	if s == nil {
		return taskTable{}
	}
	names := slices.Sorted(maps.Keys(s.Captures))
	tt := taskTable{Head: append([]string{"task", "host", "GPUs", "outcome", "exit", "duration", "attempts",
		"GPU util mean/peak", "GPU mem peak", "note"}, names...)}
	for _, t := range s.Tasks {
		code := "-"
		if t.ExitCode != nil {
			code = strconv.Itoa(*t.ExitCode)
		}
		util, mem, note := "-", "-", t.Error
		if u := t.GPUUsage; u != nil {
			util = fmt.Sprintf("%s%% / %s%%", numLabel(u.UtilMean), numLabel(u.UtilPeak))
			mem = mibLabel(u.MemPeak)
			if u.Idle != "" {
				note = strings.TrimSpace(note + " " + u.Idle)
			}
		}
		if t.HungAt != "" {
			// Where the task was when the run went silent
			// (--hang-after): its stacks are in the log dir's stacks/.
			note = strings.TrimSpace(note + " hung " + t.HungAt)
		}
		attempts := "-"
		if len(t.Attempts) > 0 {
			attempts = strconv.Itoa(len(t.Attempts))
		}
		var gpus []string
		for _, g := range t.GPUs {
			gpus = append(gpus, strconv.Itoa(g))
		}
		row := []string{t.ID, t.Host, strings.Join(gpus, ","), t.Outcome, code,
			t.Duration.Round(100 * time.Millisecond).String(), attempts, util, mem, note}
		for _, n := range names {
			row = append(row, t.Metrics[n])
		}
		tt.Rows = append(tt.Rows, row)
	}
	return tt
}

// intruders: every task's, as the summary has them.
func (r *Run) intruders(t0 time.Time) [][]string {
	if r.Summary == nil {
		return nil
	}
	var rows [][]string
	for _, t := range r.Summary.Tasks {
		for _, in := range t.Intruders {
			rows = append(rows, []string{t.ID, t.Host, strconv.Itoa(in.GPU), strconv.Itoa(in.PID), in.User, in.Command,
				durLabel(in.Seen.Sub(t0).Round(time.Second))})
		}
	}
	return rows
}
