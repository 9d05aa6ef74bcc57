package launcher

import (
	"bytes"
)

// tailDemux takes apart what one GNU tail following many files prints
// (scripts/mux.sh): each file's bytes, behind a line "==> NAME <==" when
// tail switches to it, after a newline of tail's own but for the first.
// Every NAME starts with prefix, which holds the session's random word:
// task output never passes for a header by accident. emit gets each
// file's bytes in order, as they come; bytes that may be the start of a
// header are held until the next write says.
type tailDemux struct {
	head []byte // "\n==> " + prefix
	emit func(name string, p []byte)
	cur  string // the file being printed; "" before the first header
	held []byte
}

// maxHeaderName bounds a header's name: more without " <==\n" is not a
// header tail printed.
const maxHeaderName = 512

func newTailDemux(prefix string, emit func(name string, p []byte)) *tailDemux {
	// tail's first header has no newline before it: one is supposed.
	return &tailDemux{head: []byte("\n==> " + prefix), emit: emit, held: []byte("\n")}
}

func (d *tailDemux) Write(p []byte) (int, error) {
	buf := p
	if len(d.held) > 0 {
		buf = append(d.held, p...)
		d.held = nil
	}
	for len(buf) > 0 {
		i := bytes.Index(buf, d.head)
		if i < 0 {
			k := len(buf) - partialPrefix(buf, d.head)
			d.pass(buf[:k])
			if k < len(buf) {
				d.held = append([]byte(nil), buf[k:]...)
			}
			break
		}
		d.pass(buf[:i])
		rest := buf[i+len(d.head):]
		end := bytes.Index(rest, []byte(" <==\n"))
		if end < 0 && len(rest) <= maxHeaderName && bytes.IndexByte(rest, '\n') < 0 {
			d.held = append([]byte(nil), buf[i:]...)
			break
		}
		if end < 0 || end > maxHeaderName || bytes.IndexByte(rest[:end], '\n') >= 0 {
			// Not tail's: the file's own bytes.
			d.pass(buf[i : i+len(d.head)])
			buf = rest
			continue
		}
		d.cur = string(d.head[len("\n==> "):]) + string(rest[:end])
		buf = rest[end+len(" <==\n"):]
	}
	return len(p), nil
}

func (d *tailDemux) pass(p []byte) {
	if len(p) > 0 && d.cur != "" {
		d.emit(d.cur, p)
	}
}

// partialPrefix is the length of the longest end of buf that is a proper
// start of head.
func partialPrefix(buf, head []byte) int {
	for k := min(len(buf), len(head)-1); k > 0; k-- {
		if bytes.HasPrefix(head, buf[len(buf)-k:]) {
			return k
		}
	}
	return 0
}
