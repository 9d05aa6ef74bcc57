package supervisor

import (
	"bytes"
	"io"
	"strings"
	"sync/atomic"
)

// ReplacedMarker is what a supervisor's session says on stderr, on a line
// of its own, once a newer keeper adopted the run (scripts/rundir.sh).
const ReplacedMarker = "@@tfhive-replaced "

// StreamGate passes a kept task's stream on from its marker line, counting
// the bytes: the offset in the task's output file on the host. What comes
// before the marker is the login shell's (or, in an attach session, why
// it failed): it goes to noise, or nowhere. On stderr it also watches for
// ReplacedMarker (Replaced), and takes the session's truncation line
// (End) out of the stream.
type StreamGate struct {
	Next  io.Writer
	Noise io.Writer
	// N counts the bytes passed on; Marked, when set, is told once the
	// marker has come; Replaced, when set, is told why once another
	// keeper adopted the run.
	N        *int64
	Marked   interface{ Store(bool) }
	Replaced func(why string)
	// End is the truncation line (TruncatedMarker, the mark, "\n"):
	// never passed on nor counted, it sets Truncated. held are the last
	// bytes received, when they may be its start.
	End       []byte
	Truncated *atomic.Bool
	held      []byte
	buf       []byte
	// Passed: the marker has come (or the stream has none: a session of
	// the host's multiplexer).
	Passed bool
	seen   []byte // the last bytes passed, for a marker split across writes
}

func (g *StreamGate) Write(p []byte) (int, error) {
	if g.Passed {
		g.take(p)
		return len(p), nil
	}
	g.buf = append(g.buf, p...)
	for {
		i := bytes.IndexByte(g.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := g.buf[:i]
		if string(line) == StreamMarker {
			g.Passed = true
			if g.Marked != nil {
				g.Marked.Store(true)
			}
			rest := g.buf[i+1:]
			g.buf = nil
			if len(rest) > 0 {
				g.take(rest)
			}
			return len(p), nil
		}
		if g.Noise != nil {
			g.Noise.Write(g.buf[:i+1])
		}
		g.buf = g.buf[i+1:]
	}
}

// take passes p on, but for the truncation line and what may be its start.
func (g *StreamGate) take(p []byte) {
	if g.End == nil {
		g.pass(p)
		return
	}
	if len(g.held) > 0 {
		p = append(g.held, p...)
		g.held = nil
	}
	if i := bytes.Index(p, g.End); i >= 0 {
		g.pass(p[:i])
		g.Truncated.Store(true)
		rest := p[i+len(g.End):]
		g.End = nil
		g.pass(rest)
		return
	}
	k := len(p) - PartialPrefix(p, g.End)
	g.pass(p[:k])
	if k < len(p) {
		g.held = append([]byte(nil), p[k:]...)
	}
}

// Flush passes on what was held back as the possible start of the
// truncation line: the session has ended without it.
func (g *StreamGate) Flush() {
	p := g.held
	g.held = nil
	g.pass(p)
}

func (g *StreamGate) pass(p []byte) {
	if len(p) == 0 {
		return
	}
	*g.N += int64(len(p))
	g.Next.Write(p)
	g.watch(p)
}

// watch looks for ReplacedMarker in what passed.
func (g *StreamGate) watch(p []byte) {
	if g.Replaced == nil {
		return
	}
	data := append(g.seen, p...)
	if i := bytes.Index(data, []byte(ReplacedMarker)); i >= 0 {
		line := data[i+len(ReplacedMarker):]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			g.Replaced("keeper generation " + string(line[:j]) + " adopted the run")
			g.Replaced = nil
			return
		}
		g.seen = append([]byte(nil), data[i:]...)
		return
	}
	keep := min(len(data), len(ReplacedMarker)+24)
	g.seen = append(g.seen[:0], data[len(data)-keep:]...)
}

// ClaimGate takes the supervisor's claim line off the task's stdout; lines
// before it (a login shell's rc file may print) and everything after it
// are the task's.
type ClaimGate struct {
	Next   io.Writer
	Report func(string)
	buf    []byte
	passed bool
}

func (g *ClaimGate) Write(p []byte) (int, error) {
	if g.passed {
		return g.Next.Write(p)
	}
	g.buf = append(g.buf, p...)
	for {
		i := bytes.IndexByte(g.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(g.buf[:i])
		if strings.HasPrefix(line, ClaimMarker) {
			g.passed = true
			g.Report(line)
			rest := g.buf[i+1:]
			g.buf = nil
			if len(rest) > 0 {
				g.Next.Write(rest)
			}
			return len(p), nil
		}
		g.Next.Write(g.buf[:i+1])
		g.buf = g.buf[i+1:]
	}
}

// NoiseBuffer keeps the first few hundred bytes written to it: what a
// session said before its stream (a StreamGate's Noise), enough for the
// error that quotes it.
type NoiseBuffer struct{ bytes.Buffer }

func (b *NoiseBuffer) Write(p []byte) (int, error) {
	if room := 512 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
