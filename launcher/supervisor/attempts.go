package supervisor

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// CtlEnd tells a supervisor between attempts to exit with the last one's
// status; "r N" (RestartLine) to start attempt N, only if N is its next.
const CtlEnd = "e\n"

// RestartLine starts attempt n. The number makes it safe to repeat: a new
// session repeats it, in case the old one lost it with its link.
func RestartLine(n int) string { return "r " + strconv.Itoa(n) + "\n" }

// AttemptMarker, then the run's mark, the attempt's number and its status,
// is the line a supervisor writes after an attempt's last stdout byte.
const AttemptMarker = "@@tfhive-attempt "

// AttemptFilter takes the attempt lines out of a task's stdout, wherever
// they are (after a partial last line too), and reports each.
//
// Placed (the task started by its host's multiplexer), it takes out only
// a line at an offset of the stream that its supervisor gave first, on
// its own stdout (expect): the line's text alone proves nothing, since
// the task can read the run's word from run.json and print the line
// itself; such a line is the task's output.
//
// Checked (a later session, attach.sh, or logs.sh: checked), the
// supervisor's records come from its file NAME.att in the stream itself
// (RecordLines takes them out, ahead of the stream's gate),
// each on a line "@@tfhive-rec SECRET at OFFSET", SECRET a word of that
// session alone; a line "@@tfhive-rec SECRET seen SIZE" says that every
// record of a line before SIZE has come. Those lines come from another
// process than the file's bytes (rundir.sh's tfhive_records), so anywhere
// in the stream: they are taken out first, wherever they are, and count
// for no offset. An attempt line's text met before its record, or before
// a "seen" past it, waits for them: the supervisor writes the record
// before the line, so once the file held the line its record was there.
// One no record names is the task's output. Loose (neither), it goes by
// the line's text alone.
type AttemptFilter struct {
	next   io.Writer
	prefix []byte // AttemptMarker, the mark, " "
	report func(attempt, rc int)
	held   []byte

	placed bool
	pos    int64          // the stream's bytes before held's first one
	at     map[int64]bool // offsets of attempt lines, from the records
	anyAt  int            // records without an offset: take the next lines

	rec   []byte // checked: recMarker, the session's secret, " "
	seen  int64  // checked: every record of a line before it has come
	final bool   // the stream has ended: nothing more will come
}

// recMarker starts a record of the supervisor's file in a checked stream.
const recMarker = "@@tfhive-rec "

// maxAttemptWait bounds what a checked filter holds behind an attempt
// line that waits for its record: a real one is followed by nothing
// until tfhive answers it (the supervisor waits), so past this the line
// can only be the task's.
const maxAttemptWait = 4 << 20

func NewAttemptFilter(next io.Writer, mark string, report func(attempt, rc int)) *AttemptFilter {
	return &AttemptFilter{next: next, prefix: []byte(AttemptMarker + mark + " "), report: report}
}

// Expect says that an attempt line starts at offset off of the stream
// (-1: somewhere), and makes the filter placed.
func (f *AttemptFilter) Expect(off int64) {
	f.placed = true
	if off < 0 {
		f.anyAt++
		return
	}
	if f.at == nil {
		f.at = map[int64]bool{}
	}
	f.at[off] = true
}

// Placed: the stream comes from a supervisor started by its host's
// multiplexer, whose records (Expect) place the attempt lines.
func (f *AttemptFilter) Placed() { f.placed = true }

// Loose: the stream now comes from a session that has no records.
func (f *AttemptFilter) Loose() { f.placed, f.rec = false, nil }

// Checked: the stream now comes from a session that sends the
// supervisor's records among the file's bytes, behind secret.
func (f *AttemptFilter) Checked(secret string) {
	f.placed, f.rec = true, []byte(recMarker+secret+" ")
}

func (f *AttemptFilter) Write(p []byte) (int, error) {
	n := len(p)
	if len(f.held) > 0 {
		p = append(f.held, p...)
		f.held = nil
	}
	f.scan(p)
	return n, nil
}

// RecordLines takes the record lines of a checked stream out of it, ahead
// of the stream's gate (which counts the file's bytes only), and gives
// them to the filter; the rest goes to next.
type RecordLines struct {
	next io.Writer
	f    *AttemptFilter
	held []byte
}

func (r *RecordLines) Write(p []byte) (int, error) {
	n := len(p)
	if len(r.held) > 0 {
		p = append(r.held, p...)
		r.held = nil
	}
	data, tail := r.f.records(p, false)
	r.held = tail
	if len(data) > 0 {
		if _, err := r.next.Write(data); err != nil {
			return n, err
		}
	}
	// A line that waits may be told now, with nothing after it.
	r.f.Write(nil)
	return n, nil
}

// Flush passes on what was held: the stream has ended.
func (r *RecordLines) Flush() {
	data, _ := r.f.records(r.held, true)
	r.held = nil
	if len(data) > 0 {
		r.next.Write(data)
	}
}

// records takes the record lines out of b and applies them; tail is
// what may be the start of one, to wait for the next write (none once
// final).
func (f *AttemptFilter) records(b []byte, final bool) (data, tail []byte) {
	for {
		i := bytes.Index(b, f.rec)
		if i < 0 {
			k := len(b) - PartialPrefix(b, f.rec)
			if final {
				k = len(b)
			}
			return append(data, b[:k]...), append([]byte(nil), b[k:]...)
		}
		data = append(data, b[:i]...)
		rest := b[i+len(f.rec):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			if final {
				return append(data, b[i:]...), nil
			}
			return data, append([]byte(nil), b[i:]...)
		}
		if w := strings.Fields(string(rest[:j])); len(w) == 2 {
			if off, err := strconv.ParseInt(w[1], 10, 64); err == nil && off >= 0 {
				switch w[0] {
				case "at":
					f.Expect(off)
				case "seen":
					f.seen = max(f.seen, off)
				}
			}
		}
		b = rest[j+1:]
	}
}

// scan passes p on, less the attempt lines, holding what cannot be told
// yet.
func (f *AttemptFilter) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.Index(p, f.prefix)
		if i < 0 {
			// What may be the start of a marker waits for the next write.
			k := len(p) - PartialPrefix(p, f.prefix)
			if f.final {
				k = len(p)
			}
			f.pass(p[:k])
			if k < len(p) {
				f.held = append([]byte(nil), p[k:]...)
			}
			return
		}
		at := f.pos + int64(i)
		if f.rec != nil && !f.at[at] && at >= f.seen && !f.final && len(p)-i < maxAttemptWait {
			// Its record may be on its way.
			f.pass(p[:i])
			f.held = append([]byte(nil), p[i:]...)
			return
		}
		if f.placed && !f.at[at] && f.anyAt == 0 {
			// No record put a line here: the task's own bytes.
			f.pass(p[:i+1])
			p = p[i+1:]
			continue
		}
		f.pass(p[:i])
		p = p[i:]
		rest := p[len(f.prefix):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			if len(rest) > 32 || f.final {
				// Not a line of ours after all.
				f.pass(p[:1])
				p = p[1:]
				continue
			}
			f.held = append([]byte(nil), p...)
			return
		}
		a, rc, ok := strings.Cut(string(rest[:j]), " ")
		an, err1 := strconv.Atoi(a)
		rn, err2 := strconv.Atoi(rc)
		if !ok || err1 != nil || err2 != nil {
			f.pass(p[:1])
			p = p[1:]
			continue
		}
		if f.at[at] {
			delete(f.at, at)
		} else if f.anyAt > 0 {
			f.anyAt--
		}
		f.pos += int64(len(f.prefix) + j + 1)
		f.report(an, rn)
		p = rest[j+1:]
	}
}

// AttemptRecords takes a supervisor's own stdout past its claim line:
// its records "@@tfhive-attempt MARK N RC OFFSET" go to the task's
// stdout filter (expect), the rest to next. One line at a time: the
// supervisor writes whole lines.
type AttemptRecords struct {
	next   io.Writer
	prefix string // AttemptMarker, the mark, " "
	f      *AttemptFilter
	buf    []byte
	long   bool // in a line longer than MaxGateLine
}

func (r *AttemptRecords) Write(p []byte) (int, error) {
	n := len(p)
	if r.long {
		if p, r.long = passLong(r.next, p); r.long || len(p) == 0 {
			return n, nil
		}
	}
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			r.buf, r.long = holdLine(r.next, r.buf)
			break
		}
		line := r.buf[:i+1]
		r.buf = r.buf[i+1:]
		if rest, ok := strings.CutPrefix(string(line[:i]), r.prefix); ok {
			if w := strings.Fields(rest); len(w) == 3 {
				off, err := strconv.ParseInt(w[2], 10, 64)
				if err != nil {
					off = -1
				}
				r.f.Expect(off)
				continue
			}
		}
		r.next.Write(line)
	}
	return n, nil
}

// Flush passes on what was held: the stream has ended.
func (f *AttemptFilter) Flush() {
	p := f.held
	f.held = nil
	f.final = true
	f.scan(p)
	f.pass(f.held)
	f.held = nil
	f.final = false
}

func (f *AttemptFilter) pass(p []byte) {
	if len(p) > 0 {
		f.pos += int64(len(p))
		f.next.Write(p)
	}
}

// NewAttemptRecords takes the attempt records of a supervisor of a run
// whose word is mark off its stdout, into f; the rest goes to next.
func NewAttemptRecords(next io.Writer, mark string, f *AttemptFilter) *AttemptRecords {
	return &AttemptRecords{next: next, prefix: AttemptMarker + mark + " ", f: f}
}

// NewRecordLines takes a checked stream's record lines out of it, into
// f; the rest goes to next.
func NewRecordLines(next io.Writer, f *AttemptFilter) *RecordLines {
	return &RecordLines{next: next, f: f}
}
