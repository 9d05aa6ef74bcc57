package logroot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/localfile"
)

// SummaryMax bounds the summary.json read for each run: a thousand
// tasks' summary is well under a megabyte, and a file that is not one
// must not fill memory.
const SummaryMax = 16 << 20

// Runs reads every run dir of root. A directory that holds no run
// (no summary.json, no plan.json, no lock held) is not one and is passed
// over; a summary.json that cannot be read as one is passed over with a
// warning. A root that does not exist holds no runs.
func Runs(root string, stderr io.Writer, now time.Time) ([]view.RunRecord, error) {
	return RunsCached(root, stderr, now, nil)
}

// Cache keeps the records read from ended runs' summary.json, by
// run dir, for a caller that lists the log root again and again (top): a
// summary is renamed into place whole and never written again, so the
// same size and time of the same file is the same record.
type Cache map[string]cachedSummary

type cachedSummary struct {
	size int64
	mod  time.Time
	rec  view.RunRecord
}

// RunsCached is Runs reading only the summaries not in cache
// (nil: every one).
func RunsCached(root string, stderr io.Writer, now time.Time, cache Cache) ([]view.RunRecord, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("log root %s: %v", root, rundir.PathErr(err))
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
		data, err := localfile.Read(path, SummaryMax)
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
			fmt.Fprintf(stderr, "tfhive: warning: %q: %v; skipped\n", path, rundir.PathErr(err))
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
