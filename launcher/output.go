package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tfhive/tfhive/launcher/csvlog"
	"github.com/tfhive/tfhive/launcher/view"
)

// Output fan-in: every task's stdout and stderr go to the task's log file,
// byte for byte, and to one shared console, line by line, each line prefixed
// with the task's label:
//
//	[worker:1 gpu02] Epoch 3/10
//
// The console is written by a single goroutine from an unbounded queue, so a
// slow console (a pipe into less, a stalled ssh terminal) never blocks a
// task's output: the remote process keeps running and its log stays
// complete. The price is memory while the console lags.
//
// Decisions:
//   - stderr lines look like stdout lines on the console (same prefix, same
//     colour), as they do when the program runs in a local terminal; the log
//     keeps both, whole lines at a time, so a stdout line and a stderr line
//     never tear each other (except lines over outMaxLine, see below).
//   - Only the prefix is coloured, one colour per task in the order tasks
//     are created. Red comes last, so that it shows only with six tasks or
//     more: it reads a little like "error".
//   - On a terminal, the task's text keeps its colours (SGR) and tabs, and
//     every other control byte or sequence is shown inert (view/sanitize.go), so
//     that a task cannot retitle the window, write the clipboard, move the
//     cursor or clear the screen. A line that set a colour ends with a
//     reset, so that the colour (or SGR 8, concealed) does not reach the
//     next line's prefix or tfhive's own lines. tfhive's own lines are
//     sanitised too: they quote errors from hosts.
//   - Not on a terminal, the console carries the task's bytes as they are
//     (lines split and prefixed as above): whatever reads a pipe or a file
//     gets what the task wrote, and is no more exposed than by the log
//     file, which has to keep every byte. Stripping only SGR would lose
//     the colours a CI log viewer shows and protect nothing.
//   - "\r" ends a console line like "\n", but a line ended by "\r" (a
//     progress-bar frame) is printed only if a second has passed since the
//     last one printed for that stream; the text before "\n" is always
//     printed. "\r\n" is a plain line end. An empty "\r" frame is never
//     printed. A frame is judged when "\r" arrives, decided when the next
//     byte shows whether it was "\r\n": so a bar that stalls keeps its last
//     frame until more output (or Close) comes.
//   - A line longer than outMaxLine is cut into console lines of at most
//     outMaxLine bytes (cut before a UTF-8 continuation byte), and written
//     to the log as raw bytes, so that memory per stream stays bounded.
//   - A failing log writer is not the task's problem: Write still succeeds
//     (an error there would stop the copy from the ssh session, and the
//     remote process would block on a full pipe), the log gets nothing more,
//     the console says so once, and TaskOutput.Close returns the error.
//   - The first console write error stops console output for good (later
//     lines are dropped, nothing blocks); Console.Close returns it.

// outMaxLine is the longest partial line kept per stream, for the console
// and for the log.
const outMaxLine = 64 << 10

// The console queue is a list of blocks of outBlockSize bytes, each one
// Write call; outMaxFree blocks are kept for reuse, the rest (after the
// console lagged far behind) go back to the garbage collector.
const (
	outBlockSize = 64 << 10
	outMaxFree   = 64
)

var errOutputClosed = errors.New("launcher: write to closed task output")

// Console serialises lines from many tasks, and tfhive's own messages, onto
// one writer. It never blocks a writer: lines go to an unbounded queue that a
// single goroutine drains, many lines per Write call.
type Console struct {
	// now is the clock for throttling "\r" progress lines; tests replace it
	// before creating tasks.
	now func() time.Time

	w     io.Writer
	tty   bool // sanitise text
	color bool // colour prefixes
	// rec, when set (Record), gets every line too, quiet tasks' as well:
	// the run's console.log.
	rec *Console

	mu      sync.Mutex
	cond    sync.Cond
	idle    sync.Cond // broadcast when the queue is written out (Flush)
	queue   [][]byte  // blocks of whole lines (a line may go on in the next block)
	spare   [][]byte  // the drained list, for reuse as the next queue
	free    [][]byte  // empty blocks
	ntasks  int
	closed  bool  // Close was called: queue no more
	writing bool  // the drain goroutine is writing blocks taken off the queue
	ended   bool  // the drain goroutine returned
	failed  bool  // the writer failed: queue no more
	err     error // first write error; written by the drain goroutine, read after done
	done    chan struct{}
}

// NewConsole starts a console writing to w. tty says w is a terminal: task
// prefixes get ANSI colours, and lines are sanitised for the terminal.
func NewConsole(w io.Writer, tty bool) *Console { return NewColorConsole(w, tty, tty) }

// NewColorConsole is NewConsole with colour decided apart (--color,
// NO_COLOR: view.UseColor): tty sanitises the lines, color colours the
// task prefixes.
func NewColorConsole(w io.Writer, tty, color bool) *Console {
	c := &Console{now: time.Now, w: w, tty: tty, color: color, done: make(chan struct{})}
	c.cond.L = &c.mu
	c.idle.L = &c.mu
	go c.drain()
	return c
}

// Record makes every later line of c go to w too, as a console of its
// own (no colour, nothing sanitised: a file), quiet tasks' lines as well:
// -q quietens the terminal, never the record. Call it before Task.
func (c *Console) Record(w io.Writer) { c.rec = NewColorConsole(w, false, false) }

// Printf queues one of tfhive's own lines, e.g. "tfhive: worker:1 on gpu02
// exited 3", adding "\n" if missing. It is shown even for quiet tasks.
// After Close it does nothing.
func (c *Console) Printf(format string, a ...any) {
	if c.rec != nil {
		c.rec.Printf(format, a...)
	}
	b := fmt.Appendf(nil, format, a...)
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if c.tty {
		var sgr bool
		if b, sgr = view.AppendSanitized(nil, b, view.ConsoleMode); sgr {
			b = append(b, view.SGRReset...)
		}
	}
	c.enqueue(append(b, '\n'))
}

// Task returns the output of one task, labelled e.g. "worker:1 gpu02".
// Everything written to its Stdout and Stderr goes to log as is; unless
// quiet, it also goes to the console line by line behind "[label] ". The
// task's colour is picked by the order of Task calls. A nil log discards.
func (c *Console) Task(label string, log io.Writer, quiet bool) *TaskOutput {
	c.mu.Lock()
	n := c.ntasks
	c.ntasks++
	c.mu.Unlock()
	if log == nil {
		log = io.Discard
	}
	prefix := "[" + label + "]"
	if c.color {
		prefix = view.PaintTask(prefix, n)
	}
	t := &TaskOutput{c: c, label: label, prefix: []byte(prefix), log: log, quiet: quiet}
	t.out.t, t.err.t = t, t
	if c.rec != nil {
		t.rec = c.rec.Task(label, nil, false)
	}
	return t
}

// Close writes out everything queued, stops the console's goroutine and
// returns the first error from the writer. Lines queued later are dropped.
// Close waits for the writer; it is safe to call more than once.
func (c *Console) Close() error {
	c.mu.Lock()
	c.closed = true
	c.cond.Signal()
	c.mu.Unlock()
	<-c.done
	if c.rec != nil {
		c.rec.Close()
	}
	return c.err
}

// Flush waits until every line queued so far is written, the record's
// (Record's console.log) too: a detached run's tfhive returns once the
// keeper says its tasks started, and the keeper's console (its stdout, a
// file) must say so by then. Not for a terminal or a pipe, whose reader may
// be paused (| less) and must not hold the run up.
func (c *Console) Flush() {
	c.flush()
	if c.rec != nil {
		c.rec.flush()
	}
}

// flush waits until every line queued so far is written, or the writer
// failed, or the console closed.
func (c *Console) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for (len(c.queue) > 0 || c.writing) && !c.failed && !c.ended {
		c.idle.Wait()
	}
}

// enqueue appends whole lines to the queue, or drops them if the console is
// closed or broken.
func (c *Console) enqueue(b []byte) {
	if len(b) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.failed {
		return
	}
	for len(b) > 0 {
		n := len(c.queue)
		if n == 0 || len(c.queue[n-1]) == cap(c.queue[n-1]) {
			var blk []byte
			if f := len(c.free); f > 0 {
				blk, c.free[f-1] = c.free[f-1], nil
				c.free = c.free[:f-1]
			} else {
				blk = make([]byte, 0, outBlockSize)
			}
			c.queue = append(c.queue, blk)
			n++
		}
		last := c.queue[n-1]
		k := copy(last[len(last):cap(last)], b)
		c.queue[n-1] = last[:len(last)+k]
		b = b[k:]
	}
	c.cond.Signal()
}

// drain writes the queue, a block per Write call, until Close.
func (c *Console) drain() {
	defer close(c.done)
	c.mu.Lock()
	for {
		for len(c.queue) == 0 && !c.closed {
			c.cond.Wait()
		}
		if len(c.queue) == 0 {
			c.ended = true
			c.idle.Broadcast()
			c.mu.Unlock()
			return
		}
		blocks := c.queue
		c.queue, c.spare = c.spare, nil
		c.writing = true
		c.mu.Unlock()

		var err error
		for _, b := range blocks {
			var n int
			n, err = c.w.Write(b)
			if err == nil && n < len(b) {
				err = io.ErrShortWrite
			}
			if err != nil {
				break
			}
		}

		c.mu.Lock()
		if err != nil {
			c.err, c.failed = err, true
			c.queue, c.free = nil, nil
		}
		for i, b := range blocks {
			if !c.failed && len(c.free) < outMaxFree {
				c.free = append(c.free, b[:0])
			}
			blocks[i] = nil
		}
		c.spare = blocks[:0]
		c.writing = false
		c.idle.Broadcast()
	}
}

// TaskOutput is one task's stdout and stderr. Its writers never block on the
// console; they write the log synchronously, whole lines at a time.
type TaskOutput struct {
	c      *Console
	label  string
	prefix []byte // "[label]", coloured on a terminal
	quiet  bool

	mu       sync.Mutex // guards everything below, and log, for both streams
	log      io.Writer
	logErr   error
	out, err outStream
	batch    []byte // console lines being built (during Write and Close)
	closed   bool
	capture  *taskCapture // --capture's matching, for the tasks concerned
	rec      *TaskOutput  // the task on the console's record (Record)
	errTail  lineTail     // stderr's last lines, for the summary
	// seen is the run's last output, for --hang-after (hang.go); nil:
	// not watched.
	seen *atomic.Int64
}

// Stdout is the writer for the task's standard output.
func (t *TaskOutput) Stdout() io.Writer { return &t.out }

// Stderr is the writer for the task's standard error.
func (t *TaskOutput) Stderr() io.Writer { return &t.err }

// Close writes out partial lines: a final line without newline becomes a
// console line, and goes to the log as is (stdout's first). It returns the
// log's first write error; the log itself is the caller's to close. Writes
// after Close fail; Close again returns the same.
func (t *TaskOutput) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return t.logErr
	}
	t.closed = true
	if t.capture != nil {
		t.capture.flush()
	}
	for _, s := range []*outStream{&t.out, &t.err} {
		if len(s.logPart) > 0 {
			t.writeLog(s.logPart)
		}
		if !t.quiet && len(s.cur) > 0 {
			t.emit(s.cur)
		}
		s.logPart, s.cur = nil, nil
	}
	t.flush()
	t.batch = nil
	if t.rec != nil {
		t.rec.Close()
	}
	return t.logErr
}

// writeLog writes b to the log, unless the log already failed.
func (t *TaskOutput) writeLog(b []byte) {
	if t.logErr != nil || len(b) == 0 {
		return
	}
	n, err := t.log.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		t.logErr = err
		t.c.Printf("tfhive: %s: writing log: %v; the rest of its output is not logged", t.label, err)
	}
}

// emit adds one console line: prefix, space, text, newline (no trailing
// space for an empty line). On a terminal the text is sanitised; it is a
// whole line, so a sequence split across writes is judged whole (one split
// across lines, or cut at outMaxLine, is shown inert).
func (t *TaskOutput) emit(line []byte) {
	t.batch = append(t.batch, t.prefix...)
	if len(line) > 0 {
		t.batch = append(t.batch, ' ')
		if !t.c.tty {
			t.batch = append(t.batch, line...)
		} else if b, sgr := view.AppendSanitized(t.batch, line, view.ConsoleMode); sgr {
			t.batch = append(b, view.SGRReset...)
		} else {
			t.batch = b
		}
	}
	t.batch = append(t.batch, '\n')
	if len(t.batch) >= outBatchSize {
		t.flush()
	}
}

// flush queues the built console lines.
func (t *TaskOutput) flush() {
	t.c.enqueue(t.batch)
	t.batch = t.batch[:0]
}

// outStream is stdout or stderr of a task: its partial lines.
type outStream struct {
	t       *TaskOutput
	logPart []byte // raw bytes after the last "\n" written to the log

	// Console line state. cur is the text of the current line since the last
	// "\r" or "\n". If held, cur is a frame ended by "\r" at heldAt, to be
	// printed, dropped (throttled) or, if "\n" comes next, printed as the
	// line's final text.
	cur       []byte
	held      bool
	heldAt    time.Time
	lastFrame time.Time // when the last "\r" frame printed was ended
	framed    bool      // a "\r" frame was printed on this stream
}

// Write sends p to the log and queues its lines for the console. It returns
// an error only after Close.
func (s *outStream) Write(p []byte) (int, error) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, errOutputClosed
	}
	if t.seen != nil && len(p) > 0 {
		t.seen.Store(time.Now().UnixNano())
	}
	s.log(p)
	if t.capture != nil {
		t.capture.write(s.index(), p)
	}
	if s.index() == 1 {
		t.errTail.write(p)
	}
	if t.rec != nil {
		if s.index() == 0 {
			t.rec.out.Write(p)
		} else {
			t.rec.err.Write(p)
		}
	}
	if !t.quiet {
		// The console lines of one Write are built in a pooled buffer:
		// kept per task, it would hold the largest burst of every task
		// (at hundreds of tasks, megabytes).
		bp := batchPool.Get().(*[]byte)
		t.batch = (*bp)[:0]
		s.console(p)
		t.flush()
		if cap(t.batch) <= 2*outBatchSize {
			*bp = t.batch[:0]
			batchPool.Put(bp)
		}
		t.batch = nil
	}
	return len(p), nil
}

// index is 0 for stdout, 1 for stderr.
func (s *outStream) index() int {
	if s == &s.t.err {
		return 1
	}
	return 0
}

// captureInto starts matching the task's output for c (--capture), when
// c concerns the task, recording each value in series (nil: only the
// last); before any Write.
func (t *TaskOutput) captureInto(c *Captures, id string, series *csvlog.Metrics) {
	if c.concerns(id) {
		// Each capture's values' series, then its steps'.
		t.capture = newTaskCapture(c, series.Task(id, 2*len(c.List)))
	}
}

// LastErrLines are the last lines (at most lastLines, each cut at
// lastLineBytes) the task wrote on stderr, its last line without a
// newline too: why it failed, for the summary. Read them after Close.
func (t *TaskOutput) LastErrLines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.errTail.lines()
}

// Metrics are the values captured (--capture), by name: nil when the
// task is not concerned or nothing matched. Read them after Close.
func (t *TaskOutput) Metrics() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.capture == nil {
		return nil
	}
	return t.capture.metrics()
}

// outBatchSize is how much of a task's console lines is queued at a time.
const outBatchSize = 4 << 10

var batchPool = sync.Pool{New: func() any {
	b := make([]byte, 0, outBatchSize+512)
	return &b
}}

// log writes the complete lines of logPart+p to the log, in as few calls as
// it can, and keeps the rest, unless it is longer than outMaxLine.
func (s *outStream) log(p []byte) {
	t := s.t
	if t.logErr != nil {
		return
	}
	last := bytes.LastIndexByte(p, '\n')
	if last >= 0 {
		lines := p[:last+1]
		if len(s.logPart) > 0 {
			first := bytes.IndexByte(lines, '\n')
			s.logPart = append(s.logPart, lines[:first+1]...)
			t.writeLog(s.logPart)
			s.logPart = s.logPart[:0]
			lines = lines[first+1:]
		}
		t.writeLog(lines)
		p = p[last+1:]
	}
	if len(s.logPart)+len(p) > outMaxLine {
		t.writeLog(s.logPart)
		t.writeLog(p)
		s.logPart = s.logPart[:0]
		return
	}
	s.logPart = append(s.logPart, p...)
}

// console splits p into console lines, at "\n" and "\r".
func (s *outStream) console(p []byte) {
	t := s.t
	nl, cr := -2, -2 // next "\n", "\r" at or after off; -2 unknown, -1 none
	for off := 0; off < len(p); {
		if nl != -1 && nl < off {
			nl = outIndex(p, off, '\n')
		}
		if cr != -1 && cr < off {
			cr = outIndex(p, off, '\r')
		}
		k := nl
		if cr >= 0 && (k < 0 || cr < k) {
			k = cr
		}
		if k < 0 {
			s.text(p[off:])
			return
		}
		switch {
		case p[k] == '\n' && !s.held && len(s.cur) == 0 && k-off <= outMaxLine:
			// The common case: a whole line within p, no copy.
			t.emit(p[off:k])
		case p[k] == '\n':
			s.text(p[off:k])
			t.emit(s.cur)
			s.cur, s.held = s.cur[:0], false
		default: // '\r'
			s.text(p[off:k])
			if !s.held {
				s.held = true
				if len(s.cur) > 0 {
					s.heldAt = t.c.now()
				}
			}
		}
		off = k + 1
	}
}

// text adds text without "\r" or "\n" to the current console line, first
// settling a held "\r" frame, and cuts the line at outMaxLine.
func (s *outStream) text(b []byte) {
	if len(b) == 0 {
		return
	}
	t := s.t
	if s.held {
		if len(s.cur) > 0 && (!s.framed || s.heldAt.Sub(s.lastFrame) >= time.Second) {
			t.emit(s.cur)
			s.lastFrame, s.framed = s.heldAt, true
		}
		s.cur, s.held = s.cur[:0], false
	}
	for len(s.cur)+len(b) > outMaxLine {
		n := outMaxLine - len(s.cur)
		for i := 0; i < 3 && n > 0 && b[n]&0xC0 == 0x80; i++ {
			n-- // don't cut a UTF-8 sequence
		}
		if len(s.cur) == 0 && n == 0 {
			n = outMaxLine // not UTF-8 after all
		}
		s.cur = append(s.cur, b[:n]...)
		t.emit(s.cur)
		s.cur = s.cur[:0]
		b = b[n:]
	}
	s.cur = append(s.cur, b...)
}

// outIndex is the index in p of the first c at or after off, or -1.
func outIndex(p []byte, off int, c byte) int {
	i := bytes.IndexByte(p[off:], c)
	if i < 0 {
		return -1
	}
	return off + i
}

// lineTail keeps the last non-blank lines of a stream, bounded: lastLines
// lines of at most lastLineBytes each (cut on a character's boundary).
// Every stderr byte of every task goes through it: it keeps bytes in
// buffers it reuses, and makes strings only when asked (lines).
type lineTail struct {
	last [lastLines][]byte
	n    int    // lines kept, at most lastLines
	at   int    // where the next one goes
	part []byte // the line being written, at most lastLineBytes
}

const (
	lastLines     = 5
	lastLineBytes = 200
)

func (l *lineTail) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.add(p)
			return
		}
		l.add(p[:i])
		l.end()
		p = p[i+1:]
	}
}

func (l *lineTail) add(b []byte) {
	if room := lastLineBytes - len(l.part); room > 0 {
		l.part = append(l.part, b[:min(len(b), room)]...)
	}
}

// end keeps the line written so far, unless it is blank.
func (l *lineTail) end() {
	if len(bytes.TrimSpace(l.part)) > 0 {
		l.last[l.at] = append(l.last[l.at][:0], l.part...)
		l.at = (l.at + 1) % lastLines
		l.n = min(l.n+1, lastLines)
	}
	l.part = l.part[:0]
}

func (l *lineTail) lines() []string {
	text := func(b []byte) string { return strings.TrimSpace(strings.ToValidUTF8(string(b), "")) }
	var out []string
	for k := l.n; k > 0; k-- {
		out = append(out, text(l.last[(l.at-k+lastLines)%lastLines]))
	}
	if line := text(l.part); line != "" {
		out = append(out, line)
		if len(out) > lastLines {
			out = out[1:]
		}
	}
	return out
}
