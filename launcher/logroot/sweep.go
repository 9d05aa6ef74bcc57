package logroot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/localfile"
)

// sweepRecordMax bounds sweep.json: MaxTrials trials of a few parameters.
const sweepRecordMax = 32 << 20

// Sweep reads dir's sweep.json: ok false when there is none. Its
// trials are what its parameters give (sweep.Trials), whatever the file
// lists: a trial id is a path here.
func Sweep(dir string) (record.Sweep, bool, error) {
	path := filepath.Join(dir, rundir.Sweep)
	data, err := localfile.Read(path, sweepRecordMax)
	if errors.Is(err, fs.ErrNotExist) {
		return record.Sweep{}, false, nil
	}
	if err != nil {
		return record.Sweep{}, false, fmt.Errorf("%s: %v", path, rundir.PathErr(err))
	}
	var s record.Sweep
	if err := json.Unmarshal(data, &s); err != nil {
		return record.Sweep{}, false, fmt.Errorf("%s: not a sweep's record: %v", path, err)
	}
	if s.Name != filepath.Base(dir) || !claim.ValidRunID(s.Name) || sweep.Validate(s.Params, s.Random) != nil || s.Random < 0 {
		return record.Sweep{}, false, fmt.Errorf("%s: not a sweep's record of %s", path, filepath.Base(dir))
	}
	s.Trials = sweep.Trials(s)
	return s, true, nil
}

// SweepTable is the rows of a sweep of root, in trial order: each
// trial's summary, or what its log dir says without one (running,
// unknown, not run).
func SweepTable(root string, rec record.Sweep, stderr io.Writer) view.SweepTable {
	tab := view.SweepTable{Name: rec.Name, Trials: make([]view.SweepRow, len(rec.Trials))}
	for _, p := range rec.Params {
		tab.Params = append(tab.Params, p.Name)
	}
	for i, t := range rec.Trials {
		tdir := filepath.Join(root, t.ID)
		row := view.SweepRow{Params: t.Params,
			RunRecord: view.RunRecord{RunID: t.ID, LogDir: tdir, Result: view.ResultNotRun, Metrics: map[string]string{}}}
		data, err := localfile.Read(filepath.Join(tdir, rundir.Summary), SummaryMax)
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

// TrialSummary reads the summary.json of a trial's log dir.
func TrialSummary(dir string) (*record.Summary, error) {
	data, err := localfile.Read(filepath.Join(dir, rundir.Summary), SummaryMax)
	if err != nil {
		return nil, fmt.Errorf("no summary in %s: %v", dir, rundir.PathErr(err))
	}
	var s record.Summary
	if err := json.Unmarshal(data, &s); err != nil || s.Result == "" {
		return nil, fmt.Errorf("%s: not a run summary", filepath.Join(dir, rundir.Summary))
	}
	return &s, nil
}

// Results are the trials' results as their summaries say, by id; a
// trial without one is absent.
func Results(rec record.Sweep) map[string]string {
	out := map[string]string{}
	for _, t := range rec.Trials {
		if s, err := TrialSummary(rundir.Path(t.ID)); err == nil && s.RunID == t.ID {
			out[t.ID] = s.Result
		}
	}
	return out
}
