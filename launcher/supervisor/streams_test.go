package supervisor

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
)

// The truncation line is taken out of a kept task's stderr however the
// stream is cut into writes; the bytes around it, a line with another
// mark, and what only looked like its start pass on, counted.
func TestStreamGateTruncationLine(t *testing.T) {
	const mark = "M4RK"
	end := TruncatedMarker + mark + "\n"
	for _, c := range []struct {
		name, stream, want string
		truncated          bool
	}{
		{"none", "a\nb\n", "a\nb\n", false},
		{"after the output", "a\nb\n" + end, "a\nb\n", true},
		{"after a line without its newline", "a\npartial" + end, "a\npartial", true},
		{"the task's own, with another mark", "x\n" + TruncatedMarker + "other\n", "x\n" + TruncatedMarker + "other\n", false},
		{"its start only, at the end", "x\n" + TruncatedMarker + "M4", "x\n" + TruncatedMarker + "M4", false},
		{"its start twice", "@@@tfhive-t" + end, "@@@tfhive-t", true},
	} {
		for cut := 0; cut <= len(c.stream); cut++ {
			var out bytes.Buffer
			var n int64
			var truncated atomic.Bool
			g := &StreamGate{Next: &out, N: &n, End: []byte(end), Truncated: &truncated}
			g.Write([]byte(StreamMarker + "\n"))
			for _, part := range []string{c.stream[:cut], c.stream[cut:]} {
				// One byte at a time, then the rest.
				if len(part) > 0 {
					g.Write([]byte(part[:1]))
					g.Write([]byte(part[1:]))
				}
			}
			g.Flush()
			if out.String() != c.want || n != int64(len(c.want)) || truncated.Load() != c.truncated {
				t.Errorf("%s, cut at %d: passed %q (counted %d), truncated %v; want %q, %v",
					c.name, cut, out.String(), n, truncated.Load(), c.want, c.truncated)
			}
		}
	}
}

// What may start the truncation line is held back only until the next
// bytes show it is not: a line's end never waits.
func TestStreamGateHoldsBackOnlyAStart(t *testing.T) {
	var out strings.Builder
	var n int64
	var truncated atomic.Bool
	g := &StreamGate{Next: &out, N: &n, End: []byte(TruncatedMarker + "M4RK\n"), Truncated: &truncated}
	g.Write([]byte(StreamMarker + "\nline\n"))
	if out.String() != "line\n" {
		t.Fatalf("passed %q", out.String())
	}
	g.Write([]byte("@@tfhive"))
	if out.String() != "line\n" {
		t.Fatalf("passed %q while it may start the line", out.String())
	}
	g.Write([]byte("-stream\n"))
	if out.String() != "line\n@@tfhive-stream\n" || n != int64(out.Len()) {
		t.Fatalf("passed %q, counted %d", out.String(), n)
	}
}

// A line without end before a gate's marker (a host printing without a
// newline) is not held past MaxGateLine: it is passed on as it comes, to
// its newline, and the marker after it still opens the gate; a marker
// inside it is not a line of its own and opens nothing.
func TestGatesDoNotHoldALineWithoutEnd(t *testing.T) {
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	flood := func(w interface{ Write([]byte) (int, error) }, held func() int) {
		for range 64 { // 2 MiB in one line
			if n, err := w.Write(chunk); n != len(chunk) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			if h := held(); h > MaxGateLine+len(chunk) {
				t.Fatalf("a gate holds %d bytes of one line", h)
			}
		}
	}

	var noise, next bytes.Buffer
	var n int64
	g := &StreamGate{Next: &next, Noise: &noise, N: &n}
	flood(g, func() int { return len(g.buf) })
	g.Write([]byte(StreamMarker + "\nstill the long line\n" + StreamMarker + "\ntask\n"))
	if next.String() != "task\n" || n != 5 || noise.Len() != 64*len(chunk)+len(StreamMarker)+len("\nstill the long line\n") {
		t.Errorf("stream gate: passed %q (%d), noise %d bytes", next.String(), n, noise.Len())
	}

	next.Reset()
	var claim string
	c := &ClaimGate{Next: &next, Report: func(l string) { claim = l }}
	flood(c, func() int { return len(c.buf) })
	c.Write([]byte("\n" + ClaimOK + "\ntask\n"))
	if claim != ClaimOK || next.Len() != 64*len(chunk)+1+len("task\n") || !strings.HasSuffix(next.String(), "x\ntask\n") {
		t.Errorf("claim gate: claim %q, passed %d bytes", claim, next.Len())
	}

	next.Reset()
	var out bytes.Buffer
	f := NewAttemptFilter(&out, "MK", func(int, int) {})
	r := NewAttemptRecords(&next, "MK", f)
	flood(r, func() int { return len(r.buf) })
	r.Write([]byte(" " + AttemptMarker + "MK 1 0 5\n" + AttemptMarker + "MK 2 0 7\n"))
	// The record after the long line is taken; the one inside it is not.
	if next.Len() != 64*len(chunk)+len(" "+AttemptMarker+"MK 1 0 5\n") {
		t.Errorf("attempt records: passed %d bytes", next.Len())
	}
}
