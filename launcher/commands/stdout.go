package commands

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"syscall"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/job"
)

// A closed stdout (`tfhive ps | head -1`, `tfhive run … | head -3`) is
// seen where it happens, on a write: main asks Go for SIGPIPE, so that a
// write to a pipe whose reader left fails with EPIPE instead of killing
// tfhive (exit 141 with no summary, a run left without its keeper). The
// first such write delivers launcher.StdoutClosed to the signal routing:
// a command ends as on Ctrl-C, `run` stopping its run (result
// stdout-closed), and main exits quietly with 141.

// Stdout is the commands' stdout, watched for its reader leaving.
type Stdout struct {
	w      io.Writer
	sigs   *job.Signals
	closed atomic.Bool
}

// WatchStdout wraps w: the first write that fails with EPIPE delivers
// launcher.StdoutClosed to sigs, once (a second would read as a second
// Ctrl-C, which kills at once).
func WatchStdout(w io.Writer, sigs *job.Signals) *Stdout { return &Stdout{w: w, sigs: sigs} }

func (s *Stdout) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && errors.Is(err, syscall.EPIPE) && s.closed.CompareAndSwap(false, true) {
		s.sigs.Deliver(launcher.StdoutClosed)
	}
	return n, err
}

// Closed says a write found the reader gone.
func (s *Stdout) Closed() bool { return s.closed.Load() }

// stdoutClosed says ctx was cancelled because stdout closed.
func stdoutClosed(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), launcher.ErrStdoutClosed)
}
