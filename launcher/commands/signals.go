package commands

import (
	"context"
	"os"
	"sync"
)

// Signals routes SIGINT/SIGTERM: before tasks run they cancel the
// command's context (probing stops at once); once tasks run they go to the
// launcher, which stops the tasks gracefully and kills them on a second
// signal.
type Signals struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	running bool
	last    os.Signal
	run     chan os.Signal
}

// NewSignals routes signals that arrive before tasks run to cancel.
func NewSignals(cancel context.CancelFunc) *Signals {
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
	s.cancel()
}

// Last is the last signal delivered, or nil.
func (s *Signals) Last() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// toLauncher hands later signals to the launcher; false if one already
// cancelled the run.
func (s *Signals) toLauncher() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = true
	return s.last == nil
}

// toContext makes signals cancel the context again (between attempts).
func (s *Signals) toContext() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
}
