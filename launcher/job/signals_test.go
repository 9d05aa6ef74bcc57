package job

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/launcher"
)

func TestSignalsRouting(t *testing.T) {
	cancelled := 0
	s := NewSignals(func(error) { cancelled++ })

	// Tasks running: signals go to the launcher, the context lives on.
	if !s.ToLauncher() {
		t.Fatal("toLauncher = false with no signal yet")
	}
	s.Deliver(os.Interrupt)
	s.Deliver(syscall.SIGTERM)
	if cancelled != 0 || len(s.run) != 2 || <-s.run != os.Interrupt || <-s.run != syscall.SIGTERM {
		t.Fatalf("while tasks run: %d cancels, %d signals queued", cancelled, len(s.run))
	}
	// More than the launcher reads are dropped, never blocking.
	for range cap(s.run) + 2 {
		s.Deliver(os.Interrupt)
	}
	if len(s.run) != cap(s.run) {
		t.Errorf("%d signals queued, want %d", len(s.run), cap(s.run))
	}

	// Between attempts: a signal cancels the context, and the next
	// attempt does not start.
	s = NewSignals(func(error) { cancelled++ })
	s.ToLauncher()
	s.ToContext()
	s.Deliver(syscall.SIGTERM)
	if cancelled != 1 || len(s.run) != 0 || s.Last() != syscall.SIGTERM {
		t.Errorf("between attempts: %d cancels, %d queued, last %v", cancelled, len(s.run), s.Last())
	}
	if s.ToLauncher() {
		t.Error("toLauncher = true after a signal cancelled the run")
	}
}

// A closed stdout cancels with a cause of its own, so that a command
// tells it from Ctrl-C; while tasks run it goes to the launcher as a
// signal does.
func TestSignalsStdoutClosed(t *testing.T) {
	for _, c := range []struct {
		sig  os.Signal
		want error
	}{
		{launcher.StdoutClosed, launcher.ErrStdoutClosed},
		{os.Interrupt, context.Canceled},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		NewSignals(cancel).Deliver(c.sig)
		if got := context.Cause(ctx); got != c.want {
			t.Errorf("%v: cause %v, want %v", c.sig, got, c.want)
		}
		if got := errors.Is(context.Cause(ctx), launcher.ErrStdoutClosed); got != (c.want == launcher.ErrStdoutClosed) {
			t.Errorf("%v: closed stdout = %v", c.sig, got)
		}
	}
	s := NewSignals(func(error) { t.Error("cancelled while tasks run") })
	s.ToLauncher()
	s.Deliver(launcher.StdoutClosed)
	if len(s.run) != 1 || <-s.run != launcher.StdoutClosed {
		t.Error("a closed stdout did not reach the launcher")
	}
}
