// Package hostlogs is `tfhive logs RUN -H …`: it reads a kept run's task
// output from its hosts' run directories, for a run started elsewhere
// (scripts/logs.sh): one session per host, over the probe's connection,
// all hosts at once, printed as the console prints it.
package hostlogs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
)

var logsSh = shscript.Load(scripts, "scripts/rundir.sh", "scripts/logs.sh")

// logs.sh's markers: every task's output follows logsMarker, each file
// behind logMarker NAME.out (or .err), each of its lines behind "|";
// noneMarker says why the host has nothing to give.
const (
	logsMarker = "@@tfhive-logs"
	logMarker  = "@@tfhive-log "
	noneMarker = "@@tfhive-none "
)

// Options say what Print prints, and where.
type Options struct {
	RunID string
	// Task is one task (worker:1): its stdout goes to Stdout and its
	// stderr to Stderr, as they are. "": every task's output, stdout then
	// stderr, task by task and host by host, each line prefixed as on the
	// console ("[worker:1 gpu02] …").
	Task string
	// Follow (one task only): go on until the task ends.
	Follow         bool
	Stdout, Stderr io.Writer
	// TTY: the output is a terminal: it is sanitised as the console is.
	// Color: the prefixes are coloured.
	TTY, Color bool
	Parallel   int
}

// Result is what one host gave.
type Result struct {
	Host  string
	Found bool   // it held the run (and the task asked for)
	None  string // why not, as the host says
	Err   error  // it could not be asked
}

// Print prints a kept run's task output from the hosts, in the order
// given, and says what each host held.
func Print(ctx context.Context, hosts []string, execs map[string]remote.Executor, o Options) []Result {
	secret := rand.Text()
	input := logsInput(o.RunID, o.Task, o.Follow, secret)
	if o.Task != "" {
		return taskLogs(ctx, hosts, execs, input, secret, o)
	}
	return allLogs(ctx, hosts, execs, input, o)
}

// logsInput is logs.sh with its parameters, as a stage for
// supervisor.Command.
func logsInput(runID, task string, follow bool, secret string) string {
	f := "0"
	if follow {
		f = "1"
	}
	s := logsSh.With(shscript.Set("tfhive_run", runID), shscript.Set("tfhive_task", task), shscript.Set("tfhive_follow", f), shscript.Set("tfhive_rmark", secret))
	return strconv.Itoa(len(s)) + "\n" + s
}

// runLogs runs logs.sh on one host. Its stdin stays open while it runs:
// its end tells a session that follows a task that tfhive went away (ctx
// done), and the tails there go too.
func runLogs(ctx context.Context, ex remote.Executor, input string, stdout, stderr io.Writer) error {
	if ex == nil {
		return fmt.Errorf("no connection")
	}
	proc, err := ex.Start(ctx, supervisor.Command, stdout, stderr)
	if err != nil {
		return err
	}
	if err := supervisor.WriteChunked(proc.Stdin(), input); err != nil {
		proc.Close()
		return err
	}
	var rc int
	done := make(chan struct{})
	go func() {
		rc, err = proc.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		proc.Close()
		<-done
		return ctx.Err()
	}
	proc.Stdin().Close()
	if err == nil && rc != 0 {
		err = fmt.Errorf("logs failed there (exit %d)", rc)
	}
	return err
}

// noneOf is why a host gave nothing, from what it printed before its
// output.
func noneOf(noise []byte) string {
	for _, line := range strings.Split(string(noise), "\n") {
		if why, ok := strings.CutPrefix(line, noneMarker); ok {
			return wording.FirstLine(why)
		}
	}
	return ""
}

// taskLogs: one task, every host asked at once (only one holds it).
func taskLogs(ctx context.Context, hosts []string, execs map[string]remote.Executor, input, secret string, o Options) []Result {
	res := make([]Result, len(hosts))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(max(o.Parallel, 1))
	for i, h := range hosts {
		g.Go(func() error {
			out, errw := io.Writer(&lockedWriter{mu: &mu, w: o.Stdout}), io.Writer(&lockedWriter{mu: &mu, w: o.Stderr})
			var rout, rerr *view.ReplayWriter
			if o.TTY {
				rout, rerr = view.NewReplayWriter(out), view.NewReplayWriter(errw)
				out, errw = rout, rerr
			}
			var noise supervisor.NoiseBuffer
			var n1, n2 int64
			marks := &markedFilter{next: out, secret: secret}
			og := &supervisor.StreamGate{Next: marks, Noise: io.MultiWriter(&noise, marks.catcher()), N: &n1}
			eg := &supervisor.StreamGate{Next: errw, N: &n2}
			err := runLogs(ctx, execs[h], input, og, eg)
			marks.flush()
			if rout != nil {
				rout.Close()
				rerr.Close()
			}
			res[i] = Result{Host: h, Found: og.Passed, None: noneOf(noise.Bytes()), Err: err}
			return nil
		})
	}
	g.Wait()
	return res
}

// lockedWriter serialises writes from several hosts' sessions.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// allLogs: every task. The hosts are asked at once, and printed one after
// the other: a host waits, its session held by SSH's flow control, until
// the hosts before it are printed, so that memory stays bounded however
// long the logs.
func allLogs(ctx context.Context, hosts []string, execs map[string]remote.Executor, input string, o Options) []Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make([]Result, len(hosts))
	readers := make([]*io.PipeReader, len(hosts))
	writers := make([]*io.PipeWriter, len(hosts))
	errs := make([]error, len(hosts))
	done := make([]chan struct{}, len(hosts))
	for i := range hosts {
		readers[i], writers[i] = io.Pipe()
		done[i] = make(chan struct{})
	}
	var g errgroup.Group
	g.SetLimit(max(o.Parallel, 1))
	// Started in the order they are read: a host waiting for a slot never
	// waits on one that is read after it.
	go func() {
		for i, h := range hosts {
			g.Go(func() error {
				defer close(done[i])
				errs[i] = runLogs(ctx, execs[h], input, writers[i], io.Discard)
				writers[i].CloseWithError(errs[i])
				return nil
			})
		}
	}()
	p := &linePrinter{w: bufio.NewWriterSize(o.Stdout, 64<<10), tty: o.TTY, color: o.Color, colors: map[string]int{}}
	for i, h := range hosts {
		found, none, werr := p.copyHost(readers[i], h)
		if werr != nil {
			// Nothing more can be printed: the sessions go.
			cancel()
		}
		readers[i].Close()
		<-done[i]
		res[i] = Result{Host: h, Found: found, None: none, Err: errs[i]}
		if werr != nil && res[i].Err == nil {
			res[i].Err = werr
		}
	}
	return res
}

// linePrinter prints every task's lines as the console does: "[task host]
// text", the prefix coloured and the text sanitised on a terminal.
type linePrinter struct {
	w      *bufio.Writer
	tty    bool
	color  bool
	colors map[string]int
	prefix []byte
	line   []byte
}

// copyHost prints one host's every-task output (logs.sh) and says whether
// it held the run, or why not.
func (p *linePrinter) copyHost(r io.Reader, host string) (found bool, none string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var noise []byte
	for {
		line, more, rerr := p.readLine(br)
		switch {
		case rerr != nil && len(line) == 0:
			if !found {
				none = noneOf(noise)
			}
			return found, none, p.w.Flush()
		case !found:
			if string(line) == logsMarker {
				found = true
			} else if len(noise) < 4096 {
				noise = append(append(noise, line...), '\n')
			}
		case len(line) > 0 && line[0] == '|':
			err = p.emit(line[1:])
			for more && err == nil {
				// A line longer than the console's is cut into several.
				line, more, _ = p.readLine(br)
				err = p.emit(line)
			}
		case bytes.HasPrefix(line, []byte(logMarker)):
			p.task(string(line[len(logMarker):]), host)
		}
		if err != nil {
			return found, "", err
		}
	}
}

// maxLine is the longest line printed whole, as long as the console's:
// a longer one goes on in pieces of that size.
const maxLine = 64 << 10

// readLine reads a line without its end, at most maxLine bytes of it;
// more says the line goes on.
func (p *linePrinter) readLine(br *bufio.Reader) (line []byte, more bool, err error) {
	p.line = p.line[:0]
	for len(p.line) < maxLine {
		chunk, rerr := br.ReadSlice('\n')
		p.line = append(p.line, chunk...)
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if rerr != nil {
			return p.line, false, rerr
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(p.line, []byte("\n")), []byte("\r")), false, nil
	}
	return p.line, true, nil
}

// task takes the prefix of a file's lines: NAME.out (or .err) is the
// task's stdout (stderr), which the console shows alike.
func (p *linePrinter) task(name, host string) {
	base, _, _ := strings.Cut(name, ".")
	id := "?"
	if i := strings.LastIndexByte(base, '-'); i > 0 {
		id = base[:i] + ":" + base[i+1:]
	}
	label := "[" + id + " " + host + "]"
	n, ok := p.colors[label]
	if !ok {
		n = len(p.colors)
		p.colors[label] = n
	}
	if p.tty {
		clean, _ := view.AppendSanitized(nil, []byte(label), view.ConsoleMode)
		label = string(clean)
	}
	if p.color {
		label = view.PaintTask(label, n)
	}
	p.prefix = []byte(label)
}

// emit prints one line behind the current task's prefix.
func (p *linePrinter) emit(text []byte) error {
	b := append([]byte(nil), p.prefix...)
	if len(text) > 0 {
		b = append(b, ' ')
		if !p.tty {
			b = append(b, text...)
		} else if s, sgr := view.AppendSanitized(b, text, view.ConsoleMode); sgr {
			b = append(s, view.SGRReset...)
		} else {
			b = s
		}
	}
	_, err := p.w.Write(append(b, '\n'))
	return err
}

// markLine, before a task's streams, is the run's attempt word (logs.sh).
const markLine = "@@tfhive-mark "

// markedFilter takes the attempt lines out of a task's stdout file once
// logs.sh has said the run's word: only those at an offset of the
// supervisor's records, which come in the stream behind secret
// (checked); without a word, it passes all.
type markedFilter struct {
	next   io.Writer
	mark   string
	secret string
	f      *supervisor.AttemptFilter
	recs   *supervisor.RecordLines
	set    bool
}

// catcher is the writer of what comes before the streams, line by line.
func (w *markedFilter) catcher() io.Writer { return markCatcher{w} }

type markCatcher struct{ w *markedFilter }

func (c markCatcher) Write(p []byte) (int, error) {
	if m, ok := strings.CutPrefix(strings.TrimSuffix(string(p), "\n"), markLine); ok {
		c.w.mark = m
	}
	return len(p), nil
}

func (w *markedFilter) Write(p []byte) (int, error) {
	if !w.set {
		w.set = true
		if w.mark != "" {
			w.f = supervisor.NewAttemptFilter(w.next, w.mark, func(int, int) {})
			w.f.Checked(w.secret)
			w.recs = supervisor.NewRecordLines(w.f, w.f)
		}
	}
	if w.recs != nil {
		return w.recs.Write(p)
	}
	return w.next.Write(p)
}

func (w *markedFilter) flush() {
	if w.f != nil {
		w.recs.Flush()
		w.f.Flush()
	}
}
