package view

import (
	"bytes"
	"io"
)

// ReplayWriter shows, on a terminal, output that was written to a file
// as is (a detached run's console, a task's log): line by line, each
// line sanitised as the live console does (view/sanitize.go). Close writes
// what is left of an unfinished last line.
type ReplayWriter struct {
	w   io.Writer
	buf []byte
}

// NewReplayWriter returns a ReplayWriter to w.
func NewReplayWriter(w io.Writer) *ReplayWriter { return &ReplayWriter{w: w} }

// maxReplayLine bounds the unfinished line a ReplayWriter holds: a log
// that is one line without end (a progress bar's carriage returns, a host
// printing without a newline) must not grow tfhive's memory. Past it, the
// line is shown as far as it came, and goes on from there.
const maxReplayLine = 64 << 10

func (r *ReplayWriter) Write(p []byte) (int, error) {
	r.buf = append(r.buf, p...)
	var err error
	if i := bytes.LastIndexByte(r.buf, '\n'); i >= 0 {
		err = r.flush(r.buf[:i+1])
		r.buf = append(r.buf[:0], r.buf[i+1:]...)
	}
	if len(r.buf) > maxReplayLine {
		if ferr := r.flush(r.buf); err == nil {
			err = ferr
		}
		r.buf = r.buf[:0]
	}
	return len(p), err
}

// Close writes the unfinished last line, if any.
func (r *ReplayWriter) Close() error {
	if len(r.buf) == 0 {
		return nil
	}
	err := r.flush(r.buf)
	r.buf = r.buf[:0]
	return err
}

func (r *ReplayWriter) flush(b []byte) error {
	var out []byte
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
		}
		b = b[len(line):]
		var sgr bool
		if out, sgr = AppendSanitized(out, bytes.TrimSuffix(line, []byte("\n")), ConsoleMode); sgr {
			out = append(out, SGRReset...)
		}
		if bytes.HasSuffix(line, []byte("\n")) {
			out = append(out, '\n')
		}
	}
	_, err := r.w.Write(out)
	return err
}
