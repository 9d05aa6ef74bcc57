package slurmrun

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// maxLine bounds a line of the job's output as kept here: a longer one is
// cut (its rest dropped), as a task's console line is.
const maxLine = 64 << 10

// lastLines are the deciding task's lines the summary keeps.
const lastLines = 5

// tasks reads the job's output lines, every task's prefixed "[ID NODE] "
// by the batch script (launcher/emit's slurm-task.sh): each goes to the
// console as it is and, without its prefix, to the task's log in the log
// dir. Each task's fate is not read from them but from the file its
// shell leaves (fate): its last line ("tfhive: exited 7") is for the
// reader.
type tasks struct {
	console io.Writer
	prefix  string // before each console line: a sweep's trial, "[ID] "
	quiet   bool
	byID    map[string]*taskState
	order   []*taskState
	now     func() time.Time
}

type taskState struct {
	emit.SlurmTask
	node        string
	log         *os.File
	logName     string
	first, last time.Time
	seen        bool
	outcome     string
	code        *int
	tail        []string
}

func newTasks(plan []emit.SlurmTask, logDir string, console io.Writer, quiet bool) *tasks {
	ts := &tasks{console: console, quiet: quiet, byID: map[string]*taskState{}, now: time.Now}
	for _, t := range plan {
		s := &taskState{SlurmTask: t, logName: rundir.TaskLogOf(t.Role, t.Index)}
		if logDir != "" {
			s.logName = filepath.Join(logDir, s.logName)
		}
		ts.byID[t.ID] = s
		ts.order = append(ts.order, s)
	}
	return ts
}

var (
	prefixRE = regexp.MustCompile(`^\[([a-z]+:[0-9]+) ([^ \]]+)\] (.*)$`)
	// A task's end as its shell left it (slurm-task.sh's tfhive_fate).
	fateRE = regexp.MustCompile(`^(exited|stopped) ([0-9]{1,3})$`)
)

// line takes one line of the job's output, without its newline.
func (ts *tasks) line(l []byte) {
	m := prefixRE.FindSubmatch(l)
	var t *taskState
	if m != nil {
		t = ts.byID[string(m[1])]
	}
	if t == nil {
		// The batch script's own lines, srun's, Slurm's.
		ts.say(l)
		return
	}
	if !ts.quiet {
		ts.say(l)
	}
	now := ts.now()
	if !t.seen {
		t.seen, t.first, t.node = true, now, string(m[2])
		if f, err := os.OpenFile(t.logName, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			t.log = f
		}
	}
	t.last = now
	text := string(m[3])
	if t.log != nil {
		t.log.WriteString(text + "\n")
	}
	// The task script's own lines ("tfhive: exited 7") are for the
	// reader: the task's end is what its shell left in a file (fate).
	if !strings.HasPrefix(text, "tfhive: ") {
		t.tail = append(t.tail, cut(text, 200))
		if len(t.tail) > lastLines {
			t.tail = t.tail[1:]
		}
	}
}

// fate takes task id's end as its shell left it in a file of its own
// (follow.sh's "fate|JOB|ID|WORDS"): "exited N", "stopped N" or
// "unstarted". Nothing the task printed decides it: a task that said
// "tfhive: exited 0" of its own and was then killed by Slurm (its time
// limit, the OOM killer) left no file, and was stopped.
func (ts *tasks) fate(id, words string) {
	t := ts.byID[id]
	if t == nil {
		return
	}
	if words == "unstarted" {
		t.outcome, t.code = record.OutcomeStopped, nil
		return
	}
	m := fateRE.FindStringSubmatch(words)
	if m == nil {
		return
	}
	code, _ := strconv.Atoi(m[2])
	t.outcome, t.code = record.OutcomeStopped, &code
	if m[1] == "exited" {
		t.outcome = record.OutcomeExited
	}
}

func (ts *tasks) say(l []byte) {
	ts.console.Write(append(append([]byte(ts.prefix), l...), '\n'))
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func (ts *tasks) close() {
	for _, t := range ts.order {
		if t.log != nil {
			t.log.Close()
		}
	}
}

// results are the tasks' fates for the summary: the task that decided a
// failure first (the first to exit non-zero, the script's status being
// its code), then the plan's order. A task that said nothing of its end
// was stopped by Slurm (scancel, the time limit, --kill-on-bad-exit), or
// never started when it said nothing at all.
func (ts *tasks) results(failed bool) []record.TaskResult {
	var out []record.TaskResult
	decider := -1
	for i, t := range ts.order {
		r := record.TaskResult{ID: t.ID, Role: t.Role, Index: t.Index, Host: t.node, GPUs: t.GPUs, Outcome: t.outcome, ExitCode: t.code, Log: t.logName}
		if r.GPUs == nil {
			r.GPUs = []int{}
		}
		switch {
		case r.Outcome != "":
		case t.seen:
			r.Outcome = record.OutcomeStopped
		default:
			r.Outcome = record.OutcomeNoStart
		}
		if t.seen {
			r.Duration = t.last.Sub(t.first)
		}
		if failed && decider < 0 && t.outcome == record.OutcomeExited && t.code != nil && *t.code != 0 {
			decider = i
			r.LastLines = t.tail
		}
		out = append(out, r)
	}
	if decider > 0 {
		d := out[decider]
		copy(out[1:decider+1], out[:decider])
		out[0] = d
	}
	return out
}

// lines splits what a stream writes into lines, each cut at maxLine,
// for fn; flush hands over an unfinished last line.
type lines struct {
	buf  []byte
	long bool // the line being read was cut: drop until its end
	fn   func([]byte)
}

func (w *lines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		if !w.long || len(w.buf) > 0 {
			w.fn(w.buf)
		}
		w.buf, w.long = w.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (w *lines) add(p []byte) {
	if w.long {
		return
	}
	room := maxLine - len(w.buf)
	if len(p) > room {
		w.buf = append(w.buf, p[:room]...)
		w.fn(w.buf)
		w.buf, w.long = w.buf[:0], true
		return
	}
	w.buf = append(w.buf, p...)
}

func (w *lines) flush() {
	if len(w.buf) > 0 {
		w.fn(w.buf)
		w.buf = w.buf[:0]
	}
}
