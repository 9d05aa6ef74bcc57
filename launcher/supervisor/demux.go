package supervisor

import (
	"bytes"
	"strconv"
	"strings"
)

// MuxFrames takes apart the multiplexer's stdout past its first line
// (scripts/mux.sh): frames, each a line "FILE LEN" and then exactly LEN
// bytes of that file. A frame's line is looked for only where the
// previous frame's bytes end: the bytes themselves are never read for
// one, so nothing a task prints (a frame's line, a GNU tail header, any
// word it learnt from ps or the run's files) can pass for one, or make
// its bytes another file's. emit gets each file's bytes in order, as
// they come, a frame cut across writes included.
//
// A line that is not a frame's (the stream is not what the multiplexer
// writes) stops it: what follows is nobody's, and broken is set.
type MuxFrames struct {
	Emit   func(name string, p []byte)
	line   []byte // a frame's line so far
	cur    string // the frame's file
	left   int64  // its bytes still to come
	broken bool
}

// maxFrameLine bounds a frame's line: a file's name, a space, a length.
const maxFrameLine = 256

func (d *MuxFrames) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !d.broken {
		if d.left > 0 {
			k := int(min(int64(len(p)), d.left))
			d.Emit(d.cur, p[:k])
			d.left -= int64(k)
			p = p[k:]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			d.line = append(d.line, p...)
			d.broken = len(d.line) > maxFrameLine
			break
		}
		d.line = append(d.line, p[:i]...)
		p = p[i+1:]
		name, l, ok := strings.Cut(string(d.line), " ")
		d.line = d.line[:0]
		ln, err := strconv.ParseInt(l, 10, 64)
		if !ok || err != nil || ln <= 0 || name == "" || len(name)+len(l)+1 > maxFrameLine {
			d.broken = true
			break
		}
		d.cur, d.left = name, ln
	}
	return n, nil
}

// PartialPrefix is the length of the longest end of buf that is a proper
// start of head.
func PartialPrefix(buf, head []byte) int {
	for k := min(len(buf), len(head)-1); k > 0; k-- {
		if bytes.HasPrefix(head, buf[len(buf)-k:]) {
			return k
		}
	}
	return 0
}
