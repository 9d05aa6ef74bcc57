package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/record"
)

// Signals routes SIGINT/SIGTERM, and launcher.StdoutClosed (the
// commands' Stdout): before tasks run they cancel the command's context
// (probing stops at once); once tasks run they go to the launcher, which
// stops the tasks gracefully and kills them on a second signal. A run,
// each sweep trial, and the sweep itself (launcher/sweepjob) route theirs
// through one.
type Signals struct {
	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	running bool
	last    os.Signal
	run     chan os.Signal
}

// NewSignals routes signals that arrive before tasks run to cancel: with
// launcher.ErrStdoutClosed as the cause for launcher.StdoutClosed, so that a
// command can tell it from Ctrl-C; nil (context.Canceled) for the others.
func NewSignals(cancel context.CancelCauseFunc) *Signals {
	return &Signals{cancel: cancel, run: make(chan os.Signal, 4)}
}

// Deliver routes one signal.
func (s *Signals) Deliver(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = sig
	if s.running {
		select {
		case s.run <- sig:
		default:
		}
		return
	}
	var cause error
	if sig == launcher.StdoutClosed {
		cause = launcher.ErrStdoutClosed
	}
	s.cancel(cause)
}

// Last is the last signal delivered, or nil.
func (s *Signals) Last() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// ToLauncher hands later signals to the launcher (Routed); false if one
// already cancelled the run.
func (s *Signals) ToLauncher() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = true
	return s.last == nil
}

// ToContext makes signals cancel the context again (between attempts).
func (s *Signals) ToContext() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
}

// Routed are the signals handed to the launcher, while they are
// (ToLauncher): a sweep reads its own there, to stop its trials.
func (s *Signals) Routed() <-chan os.Signal { return s.run }

// Start is an attempt's launcher.RunPlan (Hooks.Start; an adopted
// trial's too), signals going to the launcher while the tasks run;
// stderr nil says nothing of a closed stdout.
func (sigs *Signals) Start(ctx context.Context, o launcher.Options, stderr io.Writer) (*record.Summary, error) {
	if !sigs.ToLauncher() {
		return nil, context.Canceled
	}
	defer sigs.ToContext()
	// While tasks run, the first signal stops the run gracefully (the
	// cause says which signal), a second one kills at once. A closed
	// stdout is said here, on stderr, as the stop begins: the console,
	// where the run says what it does, is gone, and the stop may take
	// --grace. It never counts as the second signal: it asks nothing.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	kill := make(chan struct{})
	o.KillNow = kill
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs.run:
			if sig == launcher.StdoutClosed && stderr != nil {
				fmt.Fprintf(stderr, "tfhive: error: %s: stopping the run\n", launcher.StdoutClosed)
			}
			stop(launcher.Interrupt(sig))
		case <-done:
			return
		}
		for {
			select {
			case sig := <-sigs.run:
				if sig == launcher.StdoutClosed {
					continue
				}
				close(kill)
			case <-done:
			}
			return
		}
	}()
	return launcher.RunPlan(ctx, o)
}
