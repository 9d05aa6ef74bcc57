package supervisor

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"
)

// PreemptTap takes a session's lines of a stop from outside out of its
// stderr and keeps what they say: the preemption line (PreemptedMarker,
// the mark, " HIGH USER\n"), the cancellation line (CancelledMarker,
// the mark, " kill\n") and the stop line (StoppedMarker, the mark,
// " signalled\n"); every other byte passes on. It stands first on
// the session's stderr, so the lines are never counted as output
// (streamGate's offsets).
type PreemptTap struct {
	next     io.Writer
	prefixes [4][]byte // the preemption line's, the cancellation line's, the stop line's, the idle line's
	held     []byte    // the last bytes, when they may be a prefix's start
	line     []byte    // after the prefix, up to its newline
	in       int       // 0: in no line; 1 + the prefix's index
	rec      *Preemption
}

// Preemption is who preempted a task, or that it was cancelled, or
// that tfhive's own stop reached it, once a session said so.
type Preemption struct {
	mu        sync.Mutex
	by        string // "HIGH USER"; "" when not preempted
	cancelled bool
	signalled bool
	idle      Idle
	// OnIdle, when set before the session starts, hears each idle line
	// as it comes: "warn" (d idle so far), "busy", "stopped" (d: -1
	// unknown). It is called outside the record's lock.
	OnIdle func(what string, d time.Duration)
	// OnLedger, when set before the session starts, hears why an
	// attempt's end could not go into the host's usage ledger (the
	// host's words: not yet made one line). Outside the lock too.
	OnLedger func(why string)
}

func (p *Preemption) set(which int, what string) {
	if which == 3 {
		p.setIdle(what)
		return
	}
	p.mu.Lock()
	switch which {
	case 0:
		p.by = what
	case 1:
		p.cancelled = true
	default:
		p.signalled = true
	}
	p.mu.Unlock()
}

// Signalled says whether the supervisor passed tfhive's "t" or "k" on
// to the task while it ran: only then did tfhive stop it. A task that
// ended on its own as tfhive decided to stop it (two failing at once)
// was not.
func (p *Preemption) Signalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signalled
}

// Get is the preempting run and its user; ok false when not preempted.
// A later session knows neither: "-".
func (p *Preemption) Get() (run, user string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == "" {
		return "", "", false
	}
	run, user, _ = strings.Cut(p.by, " ")
	return run, user, true
}

// Cancelled says whether a SIGTERM to the task's supervisor (tfhive kill)
// stopped it.
func (p *Preemption) Cancelled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancelled
}

func (t *PreemptTap) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if t.in > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				if len(t.line) < 256 {
					t.line = append(t.line, p...)
				}
				return n, nil
			}
			t.line = append(t.line, p[:i]...)
			t.rec.set(t.in-1, strings.TrimSpace(string(t.line)))
			t.in, t.line = 0, nil
			p = p[i+1:]
			continue
		}
		data := p
		if len(t.held) > 0 {
			data = append(t.held, p...)
			t.held = nil
		}
		at, which := -1, 0
		for k, prefix := range t.prefixes {
			if i := bytes.Index(data, prefix); i >= 0 && (at < 0 || i < at) {
				at, which = i, k
			}
		}
		if at >= 0 {
			// The idle warning comes while the task runs, after a partial
			// line of its own maybe: the bytes before it pass on.
			t.pass(data[:at])
			t.in = which + 1
			p = data[at+len(t.prefixes[which]):]
			continue
		}
		k := len(data) - max(PartialPrefix(data, t.prefixes[0]), PartialPrefix(data, t.prefixes[1]), PartialPrefix(data, t.prefixes[2]), PartialPrefix(data, t.prefixes[3]))
		t.pass(data[:k])
		if k < len(data) {
			t.held = append([]byte(nil), data[k:]...)
		}
		return n, nil
	}
	return n, nil
}

func (t *PreemptTap) pass(p []byte) {
	if len(p) > 0 {
		t.next.Write(p)
	}
}

// Flush passes on what was held back as the possible start of a line:
// the session has ended without it.
func (t *PreemptTap) Flush() {
	p := t.held
	t.held = nil
	t.pass(p)
}

// NewPreemptTap takes the preemption, cancellation and stop lines of a
// session of a run whose word is mark out of its stderr, into rec; the
// rest goes to next.
func NewPreemptTap(next io.Writer, mark string, rec *Preemption) *PreemptTap {
	return &PreemptTap{next: next, rec: rec, prefixes: [4][]byte{
		[]byte(PreemptedMarker + mark + " "),
		[]byte(CancelledMarker + mark + " "),
		[]byte(StoppedMarker + mark + " "),
		[]byte(IdleMarker + mark + " "),
	}}
}
