package commands

import (
	"os"
	"syscall"
	"testing"
)

func TestSignalsRouting(t *testing.T) {
	cancelled := 0
	s := NewSignals(func() { cancelled++ })

	// Tasks running: signals go to the launcher, the context lives on.
	if !s.toLauncher() {
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
	s = NewSignals(func() { cancelled++ })
	s.toLauncher()
	s.toContext()
	s.Deliver(syscall.SIGTERM)
	if cancelled != 1 || len(s.run) != 0 || s.Last() != syscall.SIGTERM {
		t.Errorf("between attempts: %d cancels, %d queued, last %v", cancelled, len(s.run), s.Last())
	}
	if s.toLauncher() {
		t.Error("toLauncher = true after a signal cancelled the run")
	}
}
