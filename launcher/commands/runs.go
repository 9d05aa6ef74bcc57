package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
)

// RunsOptions are `tfhive runs`'.
type RunsOptions struct {
	Streams
	LogRoot string // --log-root; "" for tfhive-runs
	JSON    bool
	Sort    string // a metric's name; "" for start time
	Reverse bool
	// Sweep names a sweep of the log root: its table instead; CSV
	// prints that as CSV.
	Sweep string
	CSV   bool
}

// Runs lists the runs recorded in the log root: a sweep's results.
func Runs(_ context.Context, o RunsOptions) error {
	if o.Sort != "" && !launcher.ValidCaptureName(o.Sort) {
		return &UsageError{Msg: fmt.Sprintf("--sort %q: not a metric name", o.Sort), Fix: "--sort takes a NAME given to tfhive run --capture NAME=REGEX"}
	}
	root, err := checkLogRoot(o.LogRoot)
	if err != nil {
		return err
	}
	if o.Sweep != "" || o.CSV {
		return runsSweep(o, root)
	}
	rs, err := logroot.Runs(root, o.Stderr, time.Now())
	if err != nil {
		return err
	}
	if o.Sort != "" && !slices.Contains(view.MetricNames(rs), o.Sort) && len(rs) > 0 {
		fmt.Fprintf(o.Stderr, "tfhive: warning: no run in %s captured %s; listed by start time\n", root, o.Sort)
	}
	view.SortRunRecords(rs, o.Sort, o.Reverse)
	if o.JSON {
		return view.WriteRunRecordsJSON(o.Stdout, rs)
	}
	return view.WriteRunRecords(o.Stdout, rs)
}

// checkLogRoot is the log root to read: given (--log-root), else
// tfhive-runs. One that is there and is not a directory is bad input;
// one that is not there holds no runs.
func checkLogRoot(given string) (string, error) {
	root, what := given, "--log-root "+given
	if root == "" {
		root, what = rundir.Root, "log root "+rundir.Root
	}
	if st, err := os.Stat(root); err == nil && !st.IsDir() {
		return "", &UsageError{Msg: what + ": not a directory", Fix: "--log-root names the directory that holds the runs' log dirs"}
	}
	return root, nil
}

// CompleteMetrics lists the metric names of the runs in root ("":
// tfhive-runs), for runs --sort; what cannot be read is left out.
func CompleteMetrics(root string) []Candidate {
	if root == "" {
		root = rundir.Root
	}
	rs, _ := logroot.Runs(root, io.Discard, time.Now())
	var cands []Candidate
	for _, n := range view.MetricNames(rs) {
		cands = append(cands, Candidate{Word: n})
	}
	return cands
}

// runsSweep prints sweep o.Sweep's table again, from its record and its
// trials' summaries.
func runsSweep(o RunsOptions, root string) error {
	switch {
	case o.Sweep == "":
		return &UsageError{Msg: "--csv is for --sweep", Fix: "tfhive runs --sweep NAME --csv"}
	case o.JSON && o.CSV:
		return usagef("--json and --csv: give one")
	}
	if err := checkRunID("--sweep ", o.Sweep); err != nil {
		return err
	}
	rec, ok, err := logroot.Sweep(filepath.Join(root, o.Sweep))
	if err != nil {
		return err
	}
	if !ok {
		return &NoRunError{Msg: fmt.Sprintf("no sweep %s in %s", o.Sweep, root)}
	}
	tab := logroot.SweepTable(root, rec, o.Stderr)
	view.SortSweep(tab.Trials, o.Sort, o.Reverse)
	return writeSweepTable(o.Stdout, tab, o.JSON, o.CSV)
}
