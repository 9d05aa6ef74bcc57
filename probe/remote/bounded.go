package remote

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/tfhive/tfhive/probe/localfile"
)

// Bounded is a writer for a host's output that tfhive holds whole (a
// listing, a report, a line of stderr for a message): a host printing
// without end, broken or hostile, must not grow tfhive's memory without
// end. It keeps the first Max bytes written to it. Past Max it keeps
// nothing more and calls Over, once; it never fails a write, so that the
// stream is still read (an SSH channel whose output is not read stalls,
// and a local command's pipe fills).
//
// Whether what it kept may be used is the caller's to say: an answer cut
// short is not the host's answer (RunBounded drops it), a stderr cut
// short still has its first line.
type Bounded struct {
	Max int
	// Over, when set, is called once, when Max is passed (outside the
	// writer's lock: it may stop the command).
	Over func()

	mu   sync.Mutex
	buf  bytes.Buffer
	past bool
}

func (b *Bounded) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.past {
		b.mu.Unlock()
		return len(p), nil
	}
	room := b.Max - b.buf.Len()
	if len(p) <= room {
		b.buf.Write(p)
		b.mu.Unlock()
		return len(p), nil
	}
	b.buf.Write(p[:max(room, 0)])
	b.past = true
	over := b.Over
	b.mu.Unlock()
	if over != nil {
		over()
	}
	return len(p), nil
}

// Passed reports whether more than Max bytes were written.
func (b *Bounded) Passed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.past
}

// Bytes is what was kept: all that was written, or its first Max bytes
// once Passed. Later writes do not change the bytes it returned (a
// bytes.Buffer that is never read from only appends), so no copy is made
// of an answer of megabytes.
func (b *Bounded) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// String is Bytes as a string.
func (b *Bounded) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TooMuchOutputError is ErrTooMuchOutput with the bound the output passed:
// its text follows the host's name ("h1: its answer passed 4 MiB").
type TooMuchOutputError struct{ Max int }

func (e *TooMuchOutputError) Error() string {
	return "its answer passed " + localfile.SizeString(int64(e.Max))
}

// Is makes errors.Is(err, ErrTooMuchOutput) hold.
func (e *TooMuchOutputError) Is(target error) bool { return target == ErrTooMuchOutput }

// RunBounded runs cmd on e with e.Run (an executor's own Run: one that
// holds a spare session keeps it) and returns what it printed, held to
// bounds: stdout that passes maxOut stops the command at once (through a
// context of its own) and is a *TooMuchOutputError, with no stdout and
// status -1: what a host printed past its bound is unknown, so the
// caller fails closed. stderr is only cut at maxErr: it is read for a
// message, and its first bytes say as much as all of it.
//
// The rest is e.Run's: an error means the command's fate is unknown.
func RunBounded(ctx context.Context, e Executor, cmd string, stdin io.Reader, maxOut, maxErr int) (rc int, stdout, stderr []byte, err error) {
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	out := &Bounded{Max: maxOut, Over: stop}
	errb := &Bounded{Max: maxErr}
	rc, err = e.Run(rctx, cmd, stdin, out, errb)
	if out.Passed() {
		return -1, nil, errb.Bytes(), &TooMuchOutputError{Max: maxOut}
	}
	return rc, out.Bytes(), errb.Bytes(), err
}
