package supervisor

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// PreemptTap takes a session's preemption line (PreemptedMarker, the
// mark, " HIGH USER\n") out of its stderr and keeps what it says; every
// other byte passes on. It stands first on the session's stderr, so the
// line is never counted as output (streamGate's offsets).
type PreemptTap struct {
	next   io.Writer
	prefix []byte
	held   []byte // the last bytes, when they may be the prefix's start
	line   []byte // after the prefix, up to its newline
	inLine bool
	rec    *Preemption
}

// Preemption is who preempted a task, once a session said so.
type Preemption struct {
	mu sync.Mutex
	by string // "HIGH USER"; "" when not preempted
}

func (p *Preemption) set(by string) {
	p.mu.Lock()
	p.by = by
	p.mu.Unlock()
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

func (t *PreemptTap) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if t.inLine {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				if len(t.line) < 256 {
					t.line = append(t.line, p...)
				}
				return n, nil
			}
			t.line = append(t.line, p[:i]...)
			t.rec.set(strings.TrimSpace(string(t.line)))
			t.inLine, t.line = false, nil
			p = p[i+1:]
			continue
		}
		data := p
		if len(t.held) > 0 {
			data = append(t.held, p...)
			t.held = nil
		}
		if i := bytes.Index(data, t.prefix); i >= 0 {
			t.pass(data[:i])
			t.inLine = true
			p = data[i+len(t.prefix):]
			continue
		}
		k := len(data) - PartialPrefix(data, t.prefix)
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

// Flush passes on what was held back as the possible start of the line:
// the session has ended without it.
func (t *PreemptTap) Flush() {
	p := t.held
	t.held = nil
	t.pass(p)
}

// NewPreemptTap takes the preemption line of a session of a run whose
// word is mark out of its stderr, into rec; the rest goes to next.
func NewPreemptTap(next io.Writer, mark string, rec *Preemption) *PreemptTap {
	return &PreemptTap{next: next, prefix: []byte(PreemptedMarker + mark + " "), rec: rec}
}
