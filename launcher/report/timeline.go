package report

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
)

// The timeline: a row per task (and per host whose link dropped), a bar
// per attempt from its start to its end, coloured by how it ended, and a
// dot per event between (a stop sent, a restart, a preemption, a link
// lost and back); the run's own events (timeout, interrupt) across all.

const (
	colRunning = "#4e79a7"
	colOK      = "#59a14f"
	colFailed  = "#e15759"
	colStopped = "#f28e2b"
	colLost    = "#9c9c9c"
	colMark    = "#333333"
)

var timelineLegend = []legendItem{{colOK, "exited 0"}, {colFailed, "failed"}, {colStopped, "stopped by tfhive"},
	{colLost, "lost"}, {colRunning, "running, or its end not recorded"}}

// eventColor is an event's dot's.
var eventColor = map[string]string{record.EventRestart: colRunning, record.EventStop: colStopped, record.EventKill: colStopped,
	record.EventAbort: colStopped, record.EventPreempted: "#b07aa1", record.EventLinkLost: colFailed, record.EventReconnect: colOK,
	record.EventHostLost: colMark, record.EventNotStarted: colFailed}

const rowH = 18

// timelineChart draws the run's tasks from t0 for span.
func timelineChart(r *Run, t0 time.Time, span time.Duration) (chart, int) {
	ids := r.taskIDs()
	var hosts []string
	for _, e := range r.Events {
		if e.Task == "" && e.Host != "" && !slices.Contains(hosts, e.Host) {
			hosts = append(hosts, e.Host)
		}
	}
	more := 0
	if n := len(ids) + len(hosts); n > maxTaskRows {
		more = n - maxTaskRows
		ids = ids[:max(0, min(len(ids), maxTaskRows))]
		hosts = hosts[:maxTaskRows-len(ids)]
	}
	rows := map[string]int{}
	c := frame("Timeline", 960, float64(40+rowH*max(1, len(ids)+len(hosts))), 170)
	c.Legend = timelineLegend
	for i, id := range ids {
		rows["task "+id] = i
		c.Rows = append(c.Rows, rowLabel{Y: c.T + float64(i*rowH) + rowH/2 + 4, Label: id + " " + hostOf(r, id)})
	}
	for j, h := range hosts {
		rows["host "+h] = len(ids) + j
		c.Rows = append(c.Rows, rowLabel{Y: c.T + float64((len(ids)+j)*rowH) + rowH/2 + 4, Label: "link to " + h})
	}
	ta := timeAxis{t0: t0, span: span, l: c.L, r: c.R}
	c.XTicks = ta.ticks()
	addBar := func(row int, from, to time.Time, col, title string) {
		x0, x1 := ta.x(from), ta.x(to)
		c.Bars = append(c.Bars, bar{X: x0, Y: c.T + float64(row*rowH) + 3, W: max(x1-x0, 1.5), H: rowH - 6, Color: col, Title: title})
	}
	addDot := func(row int, at time.Time, col, title string) {
		c.Dots = append(c.Dots, dot{X: ta.x(at), Y: c.T + float64(row*rowH) + rowH/2, R: 4, Color: col, Title: title})
	}
	at := func(e Event) string { return durLabel(e.Time.Sub(t0).Round(100*time.Millisecond)) + ": " }
	if len(r.Events) == 0 {
		// A run without events.csv: each task from the run's start for
		// its duration, as the summary has it.
		if r.Summary != nil {
			for _, t := range r.Summary.Tasks {
				if row, ok := rows["task "+t.ID]; ok && t.Outcome != record.OutcomeNoStart {
					addBar(row, t0, t0.Add(t.Duration), outcomeColor(t), t.ID+": "+t.Outcome+" after "+durLabel(t.Duration.Round(time.Second)))
				}
			}
		}
		return c, more
	}
	type open struct {
		since   time.Time
		stopped bool
	}
	opened := map[string]*open{}
	for _, e := range r.Events {
		if e.Task == "" {
			if row, ok := rows["host "+e.Host]; ok && e.Host != "" {
				addDot(row, e.Time, eventColor[e.Kind], at(e)+e.Kind+" "+e.Detail)
			} else if e.Host == "" {
				c.Marks = append(c.Marks, mark{X: ta.x(e.Time), Title: at(e) + e.Kind + " " + e.Detail})
			}
			continue
		}
		row, ok := rows["task "+e.Task]
		if !ok {
			continue
		}
		o := opened[e.Task]
		switch e.Kind {
		case record.EventStart, record.EventAdopted, record.EventRestart:
			opened[e.Task] = &open{since: e.Time}
			if e.Kind == record.EventRestart {
				addDot(row, e.Time, eventColor[e.Kind], at(e)+"restart, "+e.Detail)
			}
		case record.EventAttemptEnd, record.EventExit, record.EventLost:
			if o == nil {
				continue
			}
			col := colFailed
			switch {
			case e.Kind == record.EventLost:
				col = colLost
			case o.stopped:
				col = colStopped
			case strings.HasSuffix(e.Detail, "code 0"):
				col = colOK
			}
			addBar(row, o.since, e.Time, col, e.Task+": "+durLabel(o.since.Sub(t0).Round(100*time.Millisecond))+" to "+
				durLabel(e.Time.Sub(t0).Round(100*time.Millisecond))+", "+e.Kind+" "+e.Detail)
			delete(opened, e.Task)
		case record.EventStop, record.EventKill, record.EventAbort:
			if o != nil {
				o.stopped = true
			}
			addDot(row, e.Time, eventColor[e.Kind], at(e)+e.Kind+" "+e.Detail)
		default:
			col := eventColor[e.Kind]
			if col == "" {
				col = colMark
			}
			addDot(row, e.Time, col, at(e)+e.Kind+" "+e.Detail)
		}
	}
	for id, o := range opened {
		addBar(rows["task "+id], o.since, t0.Add(span), colRunning, id+": from "+durLabel(o.since.Sub(t0).Round(100*time.Millisecond))+", its end not recorded")
	}
	// Map order above: the bars' order in the page is the rows'.
	slices.SortStableFunc(c.Bars, func(a, b bar) int {
		return cmp.Or(cmp.Compare(a.Y, b.Y), cmp.Compare(a.X, b.X))
	})
	return c, more
}

func hostOf(r *Run, id string) string {
	if r.Plan != nil {
		for _, t := range r.Plan.Tasks {
			if t.ID == id {
				return t.Host
			}
		}
	}
	if r.Summary != nil {
		for _, t := range r.Summary.Tasks {
			if t.ID == id {
				return t.Host
			}
		}
	}
	return ""
}

func outcomeColor(t record.TaskResult) string {
	switch {
	case t.Outcome == record.OutcomeLost:
		return colLost
	case t.Outcome == record.OutcomeStopped:
		return colStopped
	case t.ExitCode != nil && *t.ExitCode == 0:
		return colOK
	case t.Outcome == record.OutcomeHandedOver:
		return colRunning
	}
	return colFailed
}
