package testkit

import "sync"

// Warnings collects what a component warns about, from any goroutine:
// hand it Add where the component takes a func(msg string).
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// Add records msg.
func (w *Warnings) Add(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// Take returns the messages recorded since the last Take, oldest first,
// and forgets them.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}
