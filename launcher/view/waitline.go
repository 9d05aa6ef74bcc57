package view

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// WaitLine is what `run` says while it waits for GPUs (--wait) or retries
// a lost claim: on a terminal one line, redrawn in place at each retry
// (what it waits for, its place in the queue, the time left of --wait);
// elsewhere a line each time what it says changes (Waiting.Key),
// never a line per retry. Whatever else is written to it while a line is
// drawn (a warning, a preemption) first erases the line, which the next
// retry draws again.
type WaitLine struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool   // redraw in place
	drawn bool   // a live line is on the terminal, without its end
	key   string // what the last line said (Waiting.Key)
	since time.Time
	what  string     // "4 GPUs": what the last line waited for
	width func() int // the terminal's columns now; 0 unknown
}

// NewWaitLine draws on w: live (a terminal that redraws), width its
// columns now (0 unknown).
func NewWaitLine(w io.Writer, live bool, width func() int) *WaitLine {
	return &WaitLine{w: w, live: live, width: width}
}

// Show says v: redrawn, or written if it says something new.
func (l *WaitLine) Show(v Waiting) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() {
		l.since = time.Now()
	}
	if v.GPUs > 0 {
		l.what = wording.Count(v.GPUs, "GPU")
	}
	if l.live {
		// A line wider than the terminal would wrap, and "\r" go back
		// only to its last row: a row more per redraw.
		fmt.Fprintf(l.w, "\r\x1b[K%s", v.Fit(l.width()-1))
		l.drawn = true
		return
	}
	if k := v.Key(); k != l.key {
		l.key = k
		fmt.Fprintln(l.w, v.Line())
	}
}

// Done ends the wait: a drawn line is erased, and a run that waited says
// for how long, once.
func (l *WaitLine) Done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.erase()
	if !l.since.IsZero() {
		what := ""
		if l.what != "" {
			what = " for " + l.what
		}
		fmt.Fprintf(l.w, "tfhive: waited %s%s\n", ShortDuration(time.Since(l.since)), what)
		l.since = time.Time{}
	}
}

// erase takes a drawn line off the terminal; l.mu is held.
func (l *WaitLine) erase() {
	if l.drawn {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.drawn = false
	}
}

// Write writes p on a line of its own.
func (l *WaitLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.erase()
	return l.w.Write(p)
}

// WaitingFor is what a retry's err says, for the line: the GPUs asked and
// found when they are what is missing, else err's message; queued under
// --wait, behind the runs ahead.
func WaitingFor(err error, ahead []schedule.QueueEntry, queued bool, left, wait time.Duration) Waiting {
	v := Waiting{Reason: err.Error(), Ahead: ahead, Queued: queued, Left: left, Wait: wait}
	var capacity *schedule.CapacityError
	if errors.As(err, &capacity) && capacity.Asked > 0 {
		v.GPUs, v.Free = capacity.Asked, capacity.Found
	}
	return v
}
