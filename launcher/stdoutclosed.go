package launcher

import (
	"errors"

	"github.com/tfhive/tfhive/launcher/lifecycle"
)

// A closed stdout (`tfhive run … | head -3`: the pipe's reader ended)
// stops the run as Ctrl-C does, with a result of its own: whoever lists
// the runs later sees why it ended, and nobody is left reading a run
// that goes on. The caller notices the closing (a write's EPIPE) and
// cancels RunPlan's context with Interrupt(StdoutClosed).

// StdoutClosed stands for the closing of tfhive's stdout where a signal
// is expected (Interrupt, the caller's signal routing). The kernel's own
// SIGPIPE cannot serve: it comes for any pipe or socket written after
// its reader left, an SSH connection's too, and names none.
var StdoutClosed stdoutClosed

type stdoutClosed struct{}

func (stdoutClosed) String() string {
	return lifecycle.StdoutClosedReason
}

// Signal makes it an os.Signal.
func (stdoutClosed) Signal() {}

// ErrStdoutClosed is a command that ended because its stdout closed:
// the cause of its cancelled context (job.Signals), and what main exits
// quietly for.
var ErrStdoutClosed = errors.New(StdoutClosed.String())
