package launcher

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
)

// preemptTap takes a session's preemption line (preemptedMarker, the
// mark, " HIGH USER\n") out of its stderr and keeps what it says; every
// other byte passes on. It stands first on the session's stderr, so the
// line is never counted as output (streamGate's offsets).
type preemptTap struct {
	next   io.Writer
	prefix []byte
	held   []byte // the last bytes, when they may be the prefix's start
	line   []byte // after the prefix, up to its newline
	inLine bool
	rec    *preemption
}

// preemption is who preempted a task, once a session said so.
type preemption struct {
	mu sync.Mutex
	by string // "HIGH USER"; "" when not preempted
}

func (p *preemption) set(by string) {
	p.mu.Lock()
	p.by = by
	p.mu.Unlock()
}

// get is the preempting run and its user; ok false when not preempted.
// A later session knows neither: "-".
func (p *preemption) get() (run, user string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == "" {
		return "", "", false
	}
	run, user, _ = strings.Cut(p.by, " ")
	return run, user, true
}

func (r *runner) preemptTap(next io.Writer, rec *preemption) *preemptTap {
	return &preemptTap{next: next, prefix: []byte(preemptedMarker + r.mark + " "), rec: rec}
}

func (t *preemptTap) Write(p []byte) (int, error) {
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
		k := len(data) - partialPrefix(data, t.prefix)
		t.pass(data[:k])
		if k < len(data) {
			t.held = append([]byte(nil), data[k:]...)
		}
		return n, nil
	}
	return n, nil
}

func (t *preemptTap) pass(p []byte) {
	if len(p) > 0 {
		t.next.Write(p)
	}
}

// flush passes on what was held back as the possible start of the line:
// the session has ended without it.
func (t *preemptTap) flush() {
	p := t.held
	t.held = nil
	t.pass(p)
}

// preemptedSummary makes a run one of whose tasks was preempted end as
// preempted (preempted says how).
func (r *runner) preemptedSummary(s *record.Summary) {
	for _, rt := range r.tasks {
		run, user, ok := rt.preempted.get()
		if !ok {
			continue
		}
		s.Result, s.ExitCode, s.Reason = lifecycle.Preempted(rt.t.ID, rt.t.Host, run, user)
		rt.res.Outcome = record.ResultPreempted
		return
	}
}
