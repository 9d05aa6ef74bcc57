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
