package stacks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptShellcheck(t *testing.T) { shscripttest.Shellcheck(t, own) }

// What is sent means what the file says: comments dropped.
func TestScriptSentAsWritten(t *testing.T) { shscripttest.SameMeaning(t, "stacks.sh", stacksSh) }

const pyspy = `pid 71, state S, wchan futex_do_wait: python3 hang.py
Process 71: python3 hang.py
Python v3.11.2 (/usr/bin/python3.11)

Thread 76 (idle): "Thread-1 (sleeper)"
    sleeper (hang.py:5)
    Thread.run (threading.py:975)
Thread 71 (idle): "MainThread"
    deadlock (hang.py:17)
    <module> (hang.py:22)
`

// Only a marker with this call's word opens or closes a task: a line a
// task printed (its thread's name, its command line) with another word,
// or none, is its text; an id that is not the plan's kind is no task.
func TestParse(t *testing.T) {
	out := "Welcome to the login shell\n" +
		"@@tfhive-stacks s3cret task worker:0\n" + pyspy +
		"@@tfhive-stacks guess end worker:0\n" +
		"@@tfhive-stacks s3cret task ps:0 x\n" +
		"@@tfhive-stacks s3cret end worker:0\n" +
		"@@tfhive-stacks s3cret task ../../etc:0\n" +
		"@@tfhive-stacks s3cret task ps:0\npid 9, state \x1b[31mS, wchan do_select: sh\n"
	st := Parse(out, "h1", "s3cret")
	if len(st) != 2 {
		t.Fatalf("%d stacks, want 2: %+v", len(st), st)
	}
	w := st[0]
	if w.Task != "worker:0" || w.Host != "h1" || w.Where != "in deadlock (hang.py:17)" {
		t.Errorf("worker: %+v", w)
	}
	for _, want := range []string{"sleeper (hang.py:5)", "@@tfhive-stacks guess end worker:0\n", "@@tfhive-stacks s3cret task ps:0 x\n"} {
		if !strings.Contains(w.Text, want) {
			t.Errorf("worker's text lacks %q:\n%s", want, w.Text)
		}
	}
	ps := st[1]
	if ps.Task != "ps:0" || ps.Where != "wchan do_select, state [31mS" || strings.Contains(ps.Text, "\x1b") ||
		!strings.Contains(ps.Text, "(cut short: the host's answer ended here)") {
		t.Errorf("ps, cut short: %+v", ps)
	}
}

// A task's text is bounded whatever its host says.
func TestParseBounded(t *testing.T) {
	out := "@@tfhive-stacks w task worker:1\n" + strings.Repeat("    f (x.py:1)\n", TaskLimit/8) + "@@tfhive-stacks w end worker:1\n"
	st := Parse(out, "h", "w")
	if len(st) != 1 || len(st[0].Text) > TaskLimit+100 {
		t.Fatalf("%d stacks, %d bytes", len(st), len(st[0].Text))
	}
}

func TestWhere(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{pyspy, "in deadlock (hang.py:17)"},
		{"Thread 5 (active): \"worker\"\n    step (train.py:3)\n", "in step (train.py:3)"},
		// --native: the C frames above the Python one are passed over.
		{"Thread 71 (idle): \"MainThread\"\n    0x7f580bea6f16 (libc.so.6)\n    PyThread_acquire_lock_timed (python3.11)\n" +
			"    deadlock (hang.py:17)\n    <module> (hang.py:22)\n", "in deadlock (hang.py:17)"},
		{"pid 7, state S, wchan futex_do_wait: python3 x.py\nkernel stack:\n[<0>] futex_do_wait+0x46/0x90\n", "wchan futex_do_wait, state S"},
		{"no process: the task is between attempts, or ended\n", ""},
	} {
		if got := Where(c.text); got != c.want {
			t.Errorf("Where(%.30q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestScriptParameters(t *testing.T) {
	s := Script("r1", "w0rd", true)
	for _, want := range []string{"tfhive_run=r1\n", "tfhive_secret=w0rd\n", "tfhive_native=1\n", "tfhive_limit=262144\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
}

// A host that names a task planned elsewhere (two names of one machine)
// is not taken at its word for it.
func TestTakePlanned(t *testing.T) {
	answer := func(ids ...string) remote.Executor {
		return runFunc(func(stdin string, stdout io.Writer) int {
			w := secretRE.FindStringSubmatch(stdin)[1]
			for _, id := range ids {
				fmt.Fprintf(stdout, "@@tfhive-stacks %s task %s\nThread 1 (idle): \"MainThread\"\n    f (x.py:1)\n@@tfhive-stacks %s end %s\n", w, id, w, id)
			}
			return 0
		})
	}
	execs := map[string]remote.Executor{"a": answer("worker:0", "worker:1"), "b": answer("worker:0", "worker:1")}
	st, errs := Take(context.Background(), execs, "r1", Options{Planned: map[string][]string{"a": {"worker:0"}, "b": {"worker:1"}}})
	if len(errs) != 0 || len(st) != 2 || st[0].Task != "worker:0" || st[0].Host != "a" || st[1].Task != "worker:1" || st[1].Host != "b" {
		t.Errorf("%v %+v", errs, st)
	}
	if st, _ := Take(context.Background(), execs, "r1", Options{}); len(st) != 4 {
		t.Errorf("without a plan: %d stacks, want every one said", len(st))
	}
}

var secretRE = regexp.MustCompile(`tfhive_secret='?([A-Za-z0-9]+)`)

// runFunc is a host whose Run answers with f.
type runFunc func(stdin string, stdout io.Writer) int

func (f runFunc) Run(_ context.Context, cmd string, stdin io.Reader, stdout, _ io.Writer) (int, error) {
	if cmd != "bash -s" {
		return 127, nil
	}
	b, _ := io.ReadAll(stdin)
	return f(string(b), stdout), nil
}

func (f runFunc) Start(context.Context, string, io.Writer, io.Writer) (remote.Started, error) {
	return nil, errors.New("not played")
}

func (f runFunc) Close() error { return nil }
