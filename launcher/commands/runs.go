package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/localfile"
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

// summaryMax bounds the summary.json read for each run: a thousand
// tasks' summary is well under a megabyte, and a file that is not one
// must not fill memory.
const summaryMax = 16 << 20

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
	rs, err := listRuns(root, o.Stderr, time.Now())
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

// listRuns reads every run dir of root. A directory that holds no run
// (no summary.json, no plan.json, no lock held) is not one and is passed
// over; a summary.json that cannot be read as one is passed over with a
// warning. A root that does not exist holds no runs.
func listRuns(root string, stderr io.Writer, now time.Time) ([]view.RunRecord, error) {
	return listRunsCached(root, stderr, now, nil)
}

// summaryCache keeps the records read from ended runs' summary.json, by
// run dir, for a caller that lists the log root again and again (top): a
// summary is renamed into place whole and never written again, so the
// same size and time of the same file is the same record.
type summaryCache map[string]cachedSummary

type cachedSummary struct {
	size int64
	mod  time.Time
	rec  view.RunRecord
}

// listRunsCached is listRuns reading only the summaries not in cache
// (nil: every one).
func listRunsCached(root string, stderr io.Writer, now time.Time, cache summaryCache) ([]view.RunRecord, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("log root %s: %v", root, pathErr(err))
	}
	var rs []view.RunRecord
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		di, err := os.Stat(dir)
		if err != nil || !di.IsDir() {
			continue
		}
		owner := ownerName(di)
		path := filepath.Join(dir, rundir.Summary)
		fi, statErr := os.Lstat(path)
		if c, ok := cache[dir]; ok && statErr == nil && fi.Size() == c.size && fi.ModTime().Equal(c.mod) {
			c.rec.Owner = owner
			rs = append(rs, c.rec)
			continue
		}
		data, err := localfile.Read(path, summaryMax)
		switch {
		case err == nil:
			r, err := launcher.RunRecordFromSummary(e.Name(), dir, data)
			if err != nil {
				// %q: a name in the log root may hold anything.
				fmt.Fprintf(stderr, "tfhive: warning: %q is not a run summary (%v); skipped\n", path, err)
				continue
			}
			if cache != nil && statErr == nil {
				cache[dir] = cachedSummary{size: fi.Size(), mod: fi.ModTime(), rec: r}
			}
			r.Owner = owner
			rs = append(rs, r)
		case errors.Is(err, fs.ErrNotExist):
			if r, ok := unfinishedRun(e.Name(), dir, now); ok {
				r.Owner = owner
				rs = append(rs, r)
			}
		default:
			fmt.Fprintf(stderr, "tfhive: warning: %q: %v; skipped\n", path, pathErr(err))
		}
	}
	return rs, nil
}

// ownerName is the login of the user whose log dir di describes, "" when
// it is the user's own: a shared log root (runs --log-root /scratch)
// holds other users' runs, and what they wrote is shown as theirs.
func ownerName(di fs.FileInfo) string {
	if o := localfile.Owner(di); o != os.Geteuid() {
		return localfile.UserName(o)
	}
	return ""
}

// unfinishedRun is a run dir without a summary: running while its tfhive
// holds the lock, else unknown (its tfhive was killed) when a plan says a
// run started there. It started when its plan was written, or, still
// probing, when it took its lock.
func unfinishedRun(id, dir string, now time.Time) (view.RunRecord, bool) {
	r := view.RunRecord{RunID: id, LogDir: dir, Result: view.ResultUnknown, Metrics: map[string]string{}, Captures: []string{}}
	plan, planErr := os.Stat(filepath.Join(dir, rundir.Plan))
	if planErr == nil {
		r.Started = plan.ModTime()
	}
	if rundir.GoesOn(dir) {
		r.Result = view.ResultRunning
		if planErr != nil {
			if lock, err := os.Stat(filepath.Join(dir, rundir.Lock)); err == nil {
				r.Started = lock.ModTime()
			}
		}
		if !r.Started.IsZero() {
			r.Duration = now.Sub(r.Started)
		}
		return r, true
	}
	return r, planErr == nil
}

// CompleteMetrics lists the metric names of the runs in root ("":
// tfhive-runs), for runs --sort; what cannot be read is left out.
func CompleteMetrics(root string) []Candidate {
	if root == "" {
		root = rundir.Root
	}
	rs, _ := listRuns(root, io.Discard, time.Now())
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
	rec, ok, err := readSweepIn(root, o.Sweep)
	if err != nil {
		return err
	}
	if !ok {
		return &NoRunError{Msg: fmt.Sprintf("no sweep %s in %s", o.Sweep, root)}
	}
	tab := sweepTableIn(root, rec, o.Stderr)
	view.SortSweep(tab.Trials, o.Sort, o.Reverse)
	return writeSweepTable(o.Stdout, tab, o.JSON, o.CSV)
}
