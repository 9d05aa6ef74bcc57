package commands

import (
	"fmt"

	"github.com/tfhive/tfhive/launcher"
)

// The kinds of error a command returns besides those of probe, schedule and
// launcher. main maps each kind to an exit code with errors.As; the types
// carry only what is printed.

// UsageError is a command line that cannot work as written: a flag's value,
// an argument, --env, the log dir. Nothing was touched.
type UsageError struct {
	Msg string // one line, lowercase, no trailing period
	Fix string // one line saying how to fix it, or ""
}

func (e *UsageError) Error() string { return e.Msg }

// Hint says how to fix the command line.
func (e *UsageError) Hint() string { return e.Fix }

func usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// UnreachableError is returned, after the output was printed, when some
// hosts could not be probed; by plan and run only when none could.
type UnreachableError struct {
	Bad, Total int
	// Lines say, one per host, why it could not be reached.
	Lines []string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%d of %d hosts could not be reached", e.Bad, e.Total)
}

// Details has one line per unreachable host.
func (e *UnreachableError) Details() []string { return e.Lines }

// RunFailedError is a run that started and did not succeed: its summary,
// already printed, says why, and its ExitCode is tfhive's.
type RunFailedError struct{ Summary *launcher.Summary }

func (e *RunFailedError) Error() string {
	return fmt.Sprintf("run %s %s: %s", e.Summary.RunID, e.Summary.Result, e.Summary.Reason)
}
