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
	long   bool   // in a line longer than MaxGateLine, before the marker
}

func (g *StreamGate) Write(p []byte) (int, error) {
	n := len(p)
	if g.Passed {
		g.take(p)
		return n, nil
	}
	if g.long {
		if p, g.long = passLong(g.Noise, p); g.long || len(p) == 0 {
			return n, nil
		}
	}
	g.buf = append(g.buf, p...)
	for {
		i := bytes.IndexByte(g.buf, '\n')
		if i < 0 {
			g.buf, g.long = holdLine(g.Noise, g.buf)
			return n, nil
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
			return n, nil
		}
		if g.Noise != nil {
			g.Noise.Write(g.buf[:i+1])
		}
		g.buf = g.buf[i+1:]
	}
}

// MaxGateLine bounds the unfinished line a gate holds until it can tell
// whether it is one of tfhive's (a marker, a claim or record line, all
// far shorter): a host printing without a newline must not grow tfhive's
// memory. A longer line is none of them, and is passed on as it comes.
const MaxGateLine = 64 << 10

// holdLine is a gate's unfinished line, held whole while it is at most
// MaxGateLine; past that it goes to w (nil: nowhere) and long says the
// rest of the line goes there too (passLong).
func holdLine(w io.Writer, buf []byte) (held []byte, long bool) {
	if len(buf) <= MaxGateLine {
		return buf, false
	}
	if w != nil {
		w.Write(buf)
	}
	return nil, true
}

// passLong sends to w (nil: nowhere) the rest of a line too long to be
// tfhive's: up to its newline. rest is what follows it in p; long, that
// the line goes on.
func passLong(w io.Writer, p []byte) (rest []byte, long bool) {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		i = len(p) - 1
		long = true
	}
	if w != nil {
		w.Write(p[:i+1])
	}
	return p[i+1:], long
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
	long   bool // in a line longer than MaxGateLine, before the claim line
}

func (g *ClaimGate) Write(p []byte) (int, error) {
	n := len(p)
	if g.passed {
		return g.Next.Write(p)
	}
	if g.long {
		if p, g.long = passLong(g.Next, p); g.long || len(p) == 0 {
			return n, nil
		}
	}
	g.buf = append(g.buf, p...)
	for {
		i := bytes.IndexByte(g.buf, '\n')
		if i < 0 {
			g.buf, g.long = holdLine(g.Next, g.buf)
			return n, nil
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
			return n, nil
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
