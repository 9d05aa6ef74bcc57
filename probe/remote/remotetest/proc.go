package remotetest

import (
	"io"
	"sync"
	"time"
)

// Proc is one command a handler plays.
type Proc struct {
	Cmd string
	// Stdin is what the caller writes to the command's stdin, then EOF
	// once it closes it (or gives the command up).
	Stdin io.Reader
	// Stdout and Stderr reach the writers given to Start until the command
	// is given up.
	Stdout, Stderr io.Writer

	in      *stdinPipe
	done    chan struct{} // closed when the handler has returned
	stopped chan struct{} // closed by end
	once    sync.Once

	mu     sync.Mutex // guards the rest, and the caller's writers
	rc     int
	exited bool // the handler returned while the command still ran
	ending ending
	out    io.Writer
	errw   io.Writer
}

// ending is why a command was given up.
type ending int

const (
	running ending = iota
	endClosed
	endKilled
	endLost
)

func newProc(cmd string, stdout, stderr io.Writer) *Proc {
	p := &Proc{Cmd: cmd, in: newStdinPipe(), done: make(chan struct{}), stopped: make(chan struct{}),
		out: orDiscard(stdout), errw: orDiscard(stderr)}
	p.Stdin = p.in
	p.Stdout = procWriter{p, func() io.Writer { return p.out }}
	p.Stderr = procWriter{p, func() io.Writer { return p.errw }}
	return p
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Stopped is closed once the caller has given the command up (Close,
// Kill) or the host was lost: the handler should return.
func (p *Proc) Stopped() <-chan struct{} { return p.stopped }

// Killed reports whether the command was given up with Kill.
func (p *Proc) Killed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ending == endKilled
}

// Flood writes to w (p.Stdout or p.Stderr) without end, as a broken or
// hostile host does, until the caller gives the command up; it returns
// how many bytes it wrote. A caller that has not given it up once upTo
// bytes are written gets a few seconds more (the writes past a bound go
// faster than the caller's stop is scheduled); without it, Flood returns
// -1, so that a test of a caller that never stops ends.
func (p *Proc) Flood(w io.Writer, upTo int64) int64 {
	chunk := make([]byte, 32<<10)
	for i := range chunk {
		chunk[i] = "flood\n"[i%6]
	}
	var n int64
	for n < upTo {
		select {
		case <-p.stopped:
			return n
		default:
		}
		w.Write(chunk)
		n += int64(len(chunk))
	}
	select {
	case <-p.stopped:
		return n
	case <-time.After(5 * time.Second):
		return -1
	}
}

// Done is closed once the handler has returned.
func (p *Proc) Done() <-chan struct{} { return p.done }

// end gives the command up, once: its stdin ends and its output goes
// nowhere from now on.
func (p *Proc) end(why ending) {
	p.once.Do(func() {
		p.mu.Lock()
		p.ending = why
		p.mu.Unlock()
		p.in.Close()
		close(p.stopped)
	})
}

// procWriter writes to one of the caller's writers while the command is
// not given up; after that, writes succeed and go nowhere (as over SSH,
// the host's output is read and dropped).
type procWriter struct {
	p  *Proc
	to func() io.Writer
}

func (w procWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.ending != running {
		return len(b), nil
	}
	return w.to().Write(b)
}

// started is the caller's side of a Proc.
type started struct{ p *Proc }

func (s started) Stdin() io.WriteCloser { return s.p.in }
func (s started) Close() error          { s.p.end(endClosed); return nil }
func (s started) Kill()                 { s.p.end(endKilled) }

// Wait returns the handler's status once it has returned, or an error at
// once when the command was given up before. Which came first is what
// the handler saw as it returned (exited), not which of the two channels
// a select found ready: once both are, it picks either, and a command
// lost before its handler returned was once said to have exited 0.
func (s started) Wait() (int, error) {
	p := s.p
	select {
	case <-p.done:
	case <-p.stopped:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.exited:
		return p.rc, nil
	case p.ending == endLost:
		return -1, ErrLost
	}
	return -1, errAbandoned
}

// stdinPipe is a command's stdin: writes never block (sshd's window is
// megabytes, more than a test writes), reads wait for data or EOF.
type stdinPipe struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
}

func newStdinPipe() *stdinPipe {
	s := &stdinPipe{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *stdinPipe) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, io.ErrClosedPipe
	}
	s.buf = append(s.buf, b...)
	s.cond.Broadcast()
	return len(b), nil
}

func (s *stdinPipe) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cond.Broadcast()
	return nil
}

func (s *stdinPipe) Read(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.buf) == 0 && !s.closed {
		s.cond.Wait()
	}
	if len(s.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}
