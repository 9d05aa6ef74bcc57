package commands

import (
	"errors"
	"fmt"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/view"
)

// finish closes the console, prints the summary (also into console.log)
// and the report, and says how the run ended.
func (o *RunOptions) finish(sum *record.Summary, err error, r *runJob) error {
	if cerr := r.console.Close(); err == nil {
		err = cerr
	}
	if r.conlog != nil {
		if sum != nil {
			view.WriteSummary(r.conlog, sum)
		}
		r.conlog.Close()
	}
	if sum == nil {
		if r.tell != nil {
			r.tell(nil, err)
		}
		return err
	}
	if o.JSON {
		record.WriteSummaryJSON(o.Stdout, sum)
	} else {
		view.WriteSummary(o.Stdout, sum)
	}
	var recErr *record.RecordError
	if !errors.As(err, &recErr) {
		// After the summary, which the user reads meanwhile; not where
		// the summary could not be written.
		writeRunReport(r.logDir, sum.RunID, o.Stderr)
	}
	if r.tell != nil {
		// After the summary and the report: a webhook may take seconds.
		r.tell(sum, err)
	}
	if errors.As(err, &recErr) && sum.ExitCode != 0 {
		// A failed run keeps its own exit code: what the task said
		// matters more to a script than the local record.
		fmt.Fprintf(o.Stderr, "tfhive: error: %v\n", err)
		err = nil
	}
	if err != nil {
		return err
	}
	if sum.ExitCode != 0 {
		return &RunFailedError{Summary: sum}
	}
	return nil
}
