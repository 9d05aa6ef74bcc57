package sweepjob

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/localfile"
)

// summaryMax bounds a trial's summary.json read back: a thousand tasks'
// summary is well under a megabyte, and a file that is not one must not
// fill memory.
const summaryMax = 16 << 20

// TrialSummary reads the summary.json of a trial's log dir.
func TrialSummary(dir string) (*record.Summary, error) {
	data, err := localfile.Read(filepath.Join(dir, rundir.Summary), summaryMax)
	if err != nil {
		return nil, fmt.Errorf("no summary in %s: %v", dir, bare(err))
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

// bare is err without the path a *fs.PathError repeats: the message
// names it already.
func bare(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
