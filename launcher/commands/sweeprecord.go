package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/localfile"
)

// A sweep's record, sweep.json in its dir, and its trials' summaries read
// back: for a resumed sweep, its table, runs --sweep, wait and kill.

// sweepRecordMax bounds sweep.json: MaxTrials trials of a few parameters.
const sweepRecordMax = 32 << 20

// readSweepIn reads sweep name's record in root.
func readSweepIn(root, name string) (record.Sweep, bool, error) {
	return readSweep(filepath.Join(root, name))
}

// readSweep reads dir's sweep.json: ok false when there is none. Its
// trials are what its parameters give (sweep.Trials), whatever the file
// lists: a trial id is a path here.
func readSweep(dir string) (record.Sweep, bool, error) {
	path := filepath.Join(dir, rundir.Sweep)
	data, err := localfile.Read(path, sweepRecordMax)
	if errors.Is(err, fs.ErrNotExist) {
		return record.Sweep{}, false, nil
	}
	if err != nil {
		return record.Sweep{}, false, fmt.Errorf("%s: %v", path, pathErr(err))
	}
	var s record.Sweep
	if err := json.Unmarshal(data, &s); err != nil {
		return record.Sweep{}, false, fmt.Errorf("%s: not a sweep's record: %v", path, err)
	}
	if s.Name != filepath.Base(dir) || checkRunID("", s.Name) != nil || sweep.Validate(s.Params, s.Random) != nil || s.Random < 0 {
		return record.Sweep{}, false, fmt.Errorf("%s: not a sweep's record of %s", path, filepath.Base(dir))
	}
	s.Trials = sweep.Trials(s)
	return s, true, nil
}

// sweepTable is the sweep's rows, in trial order: each trial's summary,
// or what its log dir says without one (running, unknown, not run).
func sweepTable(rec record.Sweep, stderr io.Writer) view.SweepTable {
	return sweepTableIn(rundir.Root, rec, stderr)
}

// sweepTableIn is sweepTable of a sweep in root.
func sweepTableIn(root string, rec record.Sweep, stderr io.Writer) view.SweepTable {
	tab := view.SweepTable{Name: rec.Name, Trials: make([]view.SweepRow, len(rec.Trials))}
	for _, p := range rec.Params {
		tab.Params = append(tab.Params, p.Name)
	}
	for i, t := range rec.Trials {
		tdir := filepath.Join(root, t.ID)
		row := view.SweepRow{Params: t.Params,
			RunRecord: view.RunRecord{RunID: t.ID, LogDir: tdir, Result: view.ResultNotRun, Metrics: map[string]string{}}}
		data, err := localfile.Read(filepath.Join(tdir, rundir.Summary), summaryMax)
		switch {
		case err == nil:
			r, err := launcher.RunRecordFromSummary(t.ID, tdir, data)
			if err != nil {
				fmt.Fprintf(stderr, "tfhive: warning: %q is not a run summary (%v)\n", filepath.Join(tdir, rundir.Summary), err)
				row.Result = view.ResultUnknown
				break
			}
			row.RunRecord = r
			var s record.Summary
			if json.Unmarshal(data, &s) == nil {
				row.GPUs, row.UtilMean = gpuUse(s)
			}
		case errors.Is(err, fs.ErrNotExist):
			if r, ok := unfinishedRun(t.ID, tdir, time.Now()); ok {
				row.RunRecord = r
			} else if rundir.GoesOn(tdir) {
				row.Result = view.ResultRunning
			}
		default:
			row.Result = view.ResultUnknown
		}
		tab.Trials[i] = row
	}
	return tab
}

// gpuUse is the GPUs a run's tasks held and their mean utilisation over
// the tasks that --sample saw (nil: none).
func gpuUse(s record.Summary) (int, *float64) {
	gpus, n, sum := 0, 0, 0.0
	for _, t := range s.Tasks {
		gpus += len(t.GPUs)
		if t.GPUUsage != nil && t.GPUUsage.Samples > 0 {
			n++
			sum += t.GPUUsage.UtilMean
		}
	}
	if n == 0 {
		return gpus, nil
	}
	mean := sum / float64(n)
	return gpus, &mean
}

// writeSweepTable prints the table, or its JSON or CSV.
func writeSweepTable(w io.Writer, tab view.SweepTable, asJSON, asCSV bool) error {
	switch {
	case asJSON:
		return view.WriteSweepJSON(w, tab)
	case asCSV:
		return view.WriteSweepCSV(w, tab)
	}
	return view.WriteSweep(w, tab)
}

// sweepResult is a finished sweep's end for wait and attach: nil when
// every trial succeeded.
func sweepResult(rec record.Sweep) error {
	tab := sweepTable(rec, io.Discard)
	failed, notRun := 0, 0
	for _, r := range tab.Trials {
		if r.Result != record.ResultSucceeded {
			failed++
		}
		if r.Result == view.ResultNotRun {
			notRun++
		}
	}
	if failed > 0 {
		// A trial it never ran: it was stopped (kill, --max-failures,
		// Ctrl-C) before the end.
		return &SweepFailedError{Name: rec.Name, Failed: failed, Total: len(tab.Trials), Stopped: notRun > 0}
	}
	return nil
}

// oneLine is s up to its first line end: a reason read from a summary.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return view.SanitizeCell(s)
}

func sortedMetricKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if launcher.ValidCaptureName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
