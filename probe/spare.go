package probe

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
)

// A spare is a probe session kept open after the probe, running the
// fleet's Then command, until a Start of that same command on its host
// takes it (Options.Then). It saves that Start a session: sshd's fork and
// the login shell on the host, and the channel open and exec round trips.
type spare struct {
	cmd      string
	p        Started
	out, err *handoff
}

// handoff is one stream of a session that changes owner: it keeps what
// arrives until the probe's end marker (stdout) and, after it, what
// arrives before the new owner takes over; from then on it writes there.
type handoff struct {
	mu    sync.Mutex
	buf   []byte
	mark  []byte        // the end marker line, nil for stderr
	ended chan struct{} // closed once mark has arrived
	probe []byte        // the output up to and including mark
	next  io.Writer
}

// maxHeld bounds what a handoff keeps: a probe's output is a few hundred
// kilobytes at most (nvidia-smi's XML for 16 GPUs with processes).
const maxHeld = 8 << 20

func newHandoff(mark string) *handoff {
	h := &handoff{ended: make(chan struct{})}
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
	if len(h.buf) >= maxHeld {
		return len(p), nil // not the probe's: nobody reads it
	}
	from := max(len(h.buf)-len(h.mark), 0) // the marker may straddle writes
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

// spareExec is a host's executor in a fleet with Then: a Start of the
// spare's command takes the spare instead of opening a session.
type spareExec struct {
	Executor
	f *Fleet
	i int
}

func (e spareExec) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error) {
	if s := e.f.takeSpare(e.i, cmd); s != nil && !s.ended() {
		s.out.handTo(stdout, true)
		s.err.handTo(stderr, false)
		return s.p, nil
	}
	return e.Executor.Start(ctx, cmd, stdout, stderr)
}

// ended: the spare's session is gone already (its host ended it): a
// task needs a fresh one.
func (s *spare) ended() bool {
	w, ok := s.p.(*waited)
	if !ok {
		return false
	}
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (f *Fleet) takeSpare(i int, cmd string) *spare {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.spares[i]
	if s == nil || s.cmd != cmd {
		return nil
	}
	f.spares[i] = nil
	return s
}

// dropSpares ends the spares not taken: EOF makes Then's command exit
// (over SSH, closing the connection would too, but not for localhost).
// The caller holds f.mu.
func (f *Fleet) dropSpares() {
	for i := range f.spares {
		f.dropSpare(i)
	}
}

func (f *Fleet) dropSpare(i int) {
	if s := f.spares[i]; s != nil {
		s.p.Close()
		f.spares[i] = nil
	}
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

// KeepSpares ends the spares of every host not named in keep: a run's
// hosts without a task should not hold an idle session for its length.
func (f *Fleet) KeepSpares(keep []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, h := range f.Hosts {
		if !slices.Contains(keep, h.Name) {
			f.dropSpare(i)
		}
	}
}
