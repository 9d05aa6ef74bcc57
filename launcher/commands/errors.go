package commands

import (
	"fmt"

	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/claim"
)

// The kinds of error a command returns besides those of probe, schedule and
// launcher. main maps each kind to an exit code with errors.As; the types
// carry only what is printed.

// UsageError is a command line that cannot work as written (job.UsageError).
type UsageError = job.UsageError

func usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// checkRunID applies probe/claim's one rule for run ids to one given on
// the command line (what, as "--name ", or "" for an argument): every
// command refuses the same ids, before any host is touched.
func checkRunID(what, id string) error {
	if claim.ValidRunID(id) {
		return nil
	}
	return &UsageError{Msg: fmt.Sprintf("%s%q is not a run id", what, id), Fix: claim.RunIDRule}
}

// UnreachableError is hosts that could not be probed (job.UnreachableError).
type UnreachableError = job.UnreachableError

// CheckError is `run --check` refusing to start (job.CheckError); SyncError
// a --sync tree that could not be sent (job.SyncError).
type (
	CheckError = job.CheckError
	SyncError  = job.SyncError
)

// RunFailedError is a run that started and did not succeed: its summary,
// already printed, says why, and its ExitCode is tfhive's.
type RunFailedError struct{ Summary *record.Summary }

func (e *RunFailedError) Error() string {
	return fmt.Sprintf("run %s %s: %s", e.Summary.RunID, e.Summary.Result, e.Summary.Reason)
}
