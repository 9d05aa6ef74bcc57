package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
)

// Spares are sessions kept open after a command's own output is complete,
// going on with a next command (typically one waiting on its stdin), until
// a Start of that same command on their host takes one. One per host, by
// index. A spare saves that Start a session: sshd's fork and the login
// shell on the host, and the channel open and exec round trips.
//
// The probe keeps its sessions this way (probe.Options.Then) for the
// launcher's supervisors.
type Spares struct {
	mu     sync.Mutex
	spares []*spare
}

// NewSpares holds spares for n hosts.
func NewSpares(n int) *Spares { return &Spares{spares: make([]*spare, n)} }

// A spare is one kept session, running cmd.
type spare struct {
	cmd      string
	p        *waited
	out, err *handoff
}

// handoff is one stream of a session that changes owner: it keeps what
// arrives until the end marker (stdout) and, after it, what
// arrives before the new owner takes over; from then on it writes there.
type handoff struct {
	mu    sync.Mutex
	buf   []byte
	mark  []byte        // the end marker line, nil for stderr
	ended chan struct{} // closed once mark has arrived
	over  chan struct{} // closed once MaxHeld passed before mark
	// overflowed: over is closed, and nothing more is kept.
	overflowed bool
	probe      []byte // the output up to and including mark (the probe's)
	next       io.Writer
}

// MaxHeld bounds what a handoff keeps: a probe's output is a few hundred
// kilobytes at most (nvidia-smi's XML for 16 GPUs with processes). Output
// that passes it before its end marker is ErrTooMuchOutput.
const MaxHeld = 8 << 20

// ErrTooMuchOutput is a command whose output passed its bound before it was
// complete: it was stopped, and what it printed is dropped.
var ErrTooMuchOutput = errors.New("output too large")

func newHandoff(mark string) *handoff {
	h := &handoff{ended: make(chan struct{}), over: make(chan struct{})}
	if mark != "" {
		h.mark = []byte("\n" + mark + "\n")
	}
	return h
}

func (h *handoff) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.next != nil {
		return h.next.Write(p)
	}
	if h.overflowed {
		return len(p), nil
	}
	if len(h.buf)+len(p) > MaxHeld {
		if h.mark != nil && h.probe == nil {
			// The probe's own output, past its bound: nothing of it is
			// kept, and RunKeeping stops the command.
			h.buf, h.overflowed = nil, true
			close(h.over)
		}
		return len(p), nil // else not the probe's: nobody reads it
	}
	from := max(len(h.buf)-len(h.mark), 0) // the marker may straddle writes
	if need := len(h.buf) + len(p); need > cap(h.buf) {
		// Doubling, from 16 KiB: append's own growth (a quarter at a
		// time past a few kilobytes, the SSH reads being 4 KiB) copied a
		// probe's output about ten times over, hundreds of hosts at once.
		grown := make([]byte, len(h.buf), max(need, 2*cap(h.buf), 16<<10))
		copy(grown, h.buf)
		h.buf = grown
	}
	h.buf = append(h.buf, p...)
	if h.mark != nil && h.probe == nil {
		if i := bytes.Index(h.buf[from:], h.mark); i >= 0 {
			end := from + i + len(h.mark)
			h.probe = h.buf[:end:end]
			h.buf = bytes.Clone(h.buf[end:])
			close(h.ended)
		}
	}
	return len(p), nil
}

// output is everything written so far (the probe's output when the
// session ended before its marker).
func (h *handoff) output() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.probe != nil {
		if len(h.buf) == 0 {
			// Nothing writes to h.probe again (it is capped and h.buf was
			// cloned away from it): no copy needed.
			return h.probe
		}
		return append(bytes.Clone(h.probe), h.buf...)
	}
	return bytes.Clone(h.buf)
}

// handTo makes w the stream's writer. keep says whether what arrived
// after the marker goes to w first (stdout) or is dropped (stderr: the
// probe's own, e.g. a login banner).
func (h *handoff) handTo(w io.Writer, keep bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w == nil {
		w = io.Discard
	}
	if keep && len(h.buf) > 0 {
		w.Write(h.buf)
	}
	h.buf, h.probe, h.next = nil, nil, w
}

// RunKeeping runs cmd on e, host i's executor. cmd prints the line mark
// once its own output is complete, then goes on as next. From then the
// session is host i's spare for next, and RunKeeping returns the output up
// to and including mark with status 0; a session that ends before mark is
// a plain Run's result. A spare host i held is replaced (ended) once the
// new one is there, or dropped when none comes: it stays to be taken
// while cmd runs (a sweep's trial planned on the last probe starts in its
// session while the next probe runs, probe.Coalescer).
func (s *Spares) RunKeeping(ctx context.Context, i int, e Executor, cmd, mark, next string) (rc int, stdout, stderr []byte, err error) {
	kept := false
	defer func() {
		if !kept {
			s.Drop(i)
		}
	}()
	out, errw := newHandoff(mark), newHandoff("")
	p, err := e.Start(ctx, cmd, out, errw)
	if err != nil {
		return -1, nil, nil, err
	}
	w := waitInBackground(p)
	select {
	case <-out.ended:
		s.mu.Lock()
		s.drop(i)
		s.spares[i] = &spare{cmd: next, p: w, out: out, err: errw}
		s.mu.Unlock()
		kept = true
		return 0, out.output(), nil, nil
	case <-w.done:
		select {
		case <-out.over:
			return -1, nil, nil, ErrTooMuchOutput
		default:
		}
	case <-out.over:
		p.Kill()
		<-w.done
		return -1, nil, nil, ErrTooMuchOutput
	case <-ctx.Done():
		p.Kill()
		<-w.done
		return -1, out.output(), errw.output(), ctx.Err()
	}
	return w.rc, out.output(), errw.output(), w.err
}

// Executor is e, host i's executor, with its Start of host i's spare's
// command taking the spare instead of opening a session.
func (s *Spares) Executor(i int, e Executor) Executor {
	return spareExec{Executor: e, s: s, i: i}
}

// Held reports whether host i has a spare.
func (s *Spares) Held(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spares[i] != nil
}

// Drop ends host i's spare, if it has one: EOF makes its command exit
// (over SSH, closing the connection would too, but not for localhost).
func (s *Spares) Drop(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(i)
}

// DropAll ends every spare.
func (s *Spares) DropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.spares {
		s.drop(i)
	}
}

// drop is Drop with s.mu held.
func (s *Spares) drop(i int) {
	if sp := s.spares[i]; sp != nil {
		sp.p.Close()
		s.spares[i] = nil
	}
}

// ended: the spare's session is gone already (its host ended it): a
// task needs a fresh one.
func (sp *spare) ended() bool {
	select {
	case <-sp.p.done:
		return true
	default:
		return false
	}
}

func (s *Spares) take(i int, cmd string) *spare {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.spares[i]
	if sp == nil || sp.cmd != cmd {
		return nil
	}
	s.spares[i] = nil
	return sp
}

// spareExec is a host's executor while it may have a spare.
type spareExec struct {
	Executor
	s *Spares
	i int
}

func (e spareExec) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error) {
	if sp := e.s.take(e.i, cmd); sp != nil && !sp.ended() {
		sp.out.handTo(stdout, true)
		sp.err.handTo(stderr, false)
		return sp.p, nil
	}
	return e.Executor.Start(ctx, cmd, stdout, stderr)
}

// waited is a Started whose Wait runs from the start, in the background:
// the probe must notice a session that ends before its marker, and Wait
// may be called only once (os/exec).
type waited struct {
	Started
	done chan struct{}
	rc   int
	err  error
}

// LoggedIn says the session's login shell has long started: it ran the
// probe before it was handed over (the launcher's no-answer clock starts
// at a session's first byte, or at once for these).
func (w *waited) LoggedIn() bool { return true }

func waitInBackground(p Started) *waited {
	w := &waited{Started: p, done: make(chan struct{})}
	go func() {
		w.rc, w.err = p.Wait()
		close(w.done)
	}()
	return w
}

func (w *waited) Wait() (int, error) {
	<-w.done
	return w.rc, w.err
}
