package launcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/view"
)

// Reading a run's summary.json back, for `tfhive runs`: the file is the
// Summary this package writes, so it is read here; view shows the record.

// RunRecordFromSummary reads a summary.json. Names that --capture could
// not have given are left out: they would be a column each.
func RunRecordFromSummary(id, dir string, data []byte) (view.RunRecord, error) {
	var s record.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		// In the file's terms, not Go's.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return view.RunRecord{}, fmt.Errorf("not JSON: %v", se)
		case errors.As(err, &te) && te.Field == "":
			return view.RunRecord{}, fmt.Errorf("a JSON %s, not an object", te.Value)
		case errors.As(err, &te):
			return view.RunRecord{}, fmt.Errorf("a JSON %s in its %s", te.Value, te.Field)
		}
		return view.RunRecord{}, err
	}
	if s.Result == "" {
		return view.RunRecord{}, errors.New("no result")
	}
	r := view.RunRecord{RunID: id, LogDir: dir, Started: s.Started, Duration: s.Duration, Result: s.Result,
		ExitCode: intPtr(s.ExitCode), Reason: s.Reason, Command: s.Command, Metrics: map[string]string{}, Captures: []string{}}
	for k, v := range s.Metrics {
		if ValidCaptureName(k) {
			r.Metrics[k] = v
		}
	}
	for k := range s.Captures {
		if ValidCaptureName(k) {
			r.Captures = append(r.Captures, k)
		}
	}
	slices.Sort(r.Captures)
	return r, nil
}
