// Package report writes a run's report (report.html in its log dir, and
// `tfhive report RUN`), a sweep's (`tfhive report SWEEP`) and compare's
// page (`tfhive compare`, compare.go): one HTML file that needs nothing
// else, to read offline or from a mail: the tasks' timeline, every GPU's
// utilisation as one heat map (heatmap.go) with each task's charts below,
// each captured metric by step or time (curves.go), the summary table,
// the intruders and the run's record; for a sweep, each metric against
// each parameter, each trial's curves and the trials, sortable
// (sorttable.go).
//
// Reading (load.go, csv.go, sweep.go) is bounded, as everything read
// from a log dir is: each file has a size cap, every series is thinned to
// at most maxPoints points, and what was cut is said in the report.
// Rendering (render.go, chart.go, report.html.tmpl) goes through
// html/template alone, with the charts drawn as inline SVG by a few lines
// of Go: whatever a task printed, a host answered or a file holds is text
// in the page, never markup, and the page's Content-Security-Policy
// forbids every fetch and script: the buttons (x by step or time, y
// linear or log, smoothing, a table's order) are radio buttons and CSS
// rules, every view drawn and one shown.
//
// The charts are drawn here rather than by a chart library: the two Go
// ones at hand (gonum.org/v1/plot, github.com/go-analyze/charts) render a
// whole SVG document as a string, to be pasted into the page as trusted
// markup, so that the escaping of task ids, host names and a sweep's
// parameter values would be theirs; both bring freetype and fonts for
// measuring text that the browser measures anyway. Line and dot charts
// with ticks are a few dozen lines.
package report
