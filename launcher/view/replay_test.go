package view

import (
	"errors"
	"strings"
	"testing"
)

// A file's output replayed on a terminal: whole lines only, each
// sanitised as the console does, colour reset after a line that set one;
// an unfinished last line comes at Close, however the bytes were cut.
func TestReplayWriter(t *testing.T) {
	in := "step 1\n\x1b]52;c;eA==\x07 clip\n\x1b[31mred\npartial \x1b[2J"
	want := "step 1\n^[]52;c;eA==^G clip\n\x1b[31mred" + SGRReset + "\npartial ^[[2J"
	for cut := 0; cut <= len(in); cut++ {
		var out strings.Builder
		r := NewReplayWriter(&out)
		for _, part := range []string{in[:cut], in[cut:]} {
			if n, err := r.Write([]byte(part)); n != len(part) || err != nil {
				t.Fatalf("cut at %d: Write: %d, %v", cut, n, err)
			}
		}
		if !strings.HasPrefix(want, out.String()) || strings.Contains(out.String(), "partial") {
			t.Fatalf("cut at %d: before Close: %q", cut, out.String())
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("cut at %d: %q, want %q", cut, out.String(), want)
		}
		if err := r.Close(); err != nil || out.String() != want {
			t.Fatalf("second Close: %v, %q", err, out.String())
		}
	}
}

// The terminal's write error is the caller's, at the line that failed.
func TestReplayWriterError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReplayWriter(failingWriter{boom})
	if _, err := r.Write([]byte("no newline yet")); err != nil {
		t.Errorf("Write of a partial line: %v", err)
	}
	if _, err := r.Write([]byte("\n")); err != boom {
		t.Errorf("Write: %v, want %v", err, boom)
	}
	r.Write([]byte("last"))
	if err := r.Close(); err != boom {
		t.Errorf("Close: %v, want %v", err, boom)
	}
}

// failingWriter fails every write with err.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// A line without end is not held past maxReplayLine: it is shown as far
// as it came, and goes on from there.
func TestReplayWriterLineWithoutEnd(t *testing.T) {
	var out strings.Builder
	r := NewReplayWriter(&out)
	chunk := strings.Repeat("\r50%", 8<<10)
	for range 64 { // 2 MiB, no newline
		r.Write([]byte(chunk))
		if len(r.buf) > maxReplayLine {
			t.Fatalf("holds %d bytes of one line", len(r.buf))
		}
	}
	r.Write([]byte("\ndone\n"))
	r.Close()
	if !strings.HasSuffix(out.String(), "\ndone\n") || !strings.Contains(out.String(), "50%") {
		t.Errorf("%d bytes, ending %q", out.Len(), out.String()[max(out.Len()-20, 0):])
	}
}
