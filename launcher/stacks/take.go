package stacks

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

//go:embed scripts/*.sh
var own embed.FS

var stacksSh = shscript.Load(own, "scripts/stacks.sh")

// The bounds of what is read from a host: a task's text, its processes
// (torchrun's eight workers and their helpers fit), a tool's time on
// one process, and a host's whole answer, past which the rest is
// dropped.
const (
	TaskLimit  = 256 << 10
	taskProcs  = 64
	toolWait   = 20 * time.Second
	hostLimit  = 8 << 20
	markerWord = "@@tfhive-stacks"
)

// Stack is one task's stacks, as its host gave them.
type Stack struct {
	Task, Host string
	// Text is what stacks.sh said of the task's processes, made inert
	// (Inert): at most TaskLimit bytes.
	Text string
	// Where is the innermost frame of its main thread, or the first
	// process's wait channel (Where).
	Where string
}

// Options say how to take them.
type Options struct {
	Native bool // py-spy dump --native: the C frames too
	// Parallel bounds the hosts read at once; 0: all.
	Parallel int
	// Planned, when set, gives by host the tasks planned there: a host
	// that names another (two names of one machine, or hosts that share
	// a process table) is not taken at its word for it.
	Planned map[string][]string
}

// Take takes the stacks of run's tasks on every host of execs at once,
// each over its host's connection (a session of it, no new login). The
// errors are by host; the stacks in host order, then as each host said.
func Take(ctx context.Context, execs map[string]remote.Executor, run string, o Options) ([]Stack, map[string]error) {
	hosts := slices.Sorted(func(yield func(string) bool) {
		for h := range execs {
			if !yield(h) {
				return
			}
		}
	})
	got := make([][]Stack, len(hosts))
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(o.Parallel, len(hosts), 1))
	if o.Parallel > 0 {
		sem = make(chan struct{}, o.Parallel)
	}
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s, err := takeOn(ctx, execs[h], h, run, o.Native)
			if want, ok := o.Planned[h]; ok {
				s = slices.DeleteFunc(s, func(st Stack) bool { return !slices.Contains(want, st.Task) })
			}
			got[i] = s
			if err != nil {
				mu.Lock()
				errs[h] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return slices.Concat(got...), errs
}

// takeOn reads one host's answer.
func takeOn(ctx context.Context, ex remote.Executor, host, run string, native bool) ([]Stack, error) {
	if ex == nil {
		return nil, fmt.Errorf("no connection")
	}
	secret := rand.Text()
	script := Script(run, secret, native)
	// Cut, not failed, past hostLimit: only whole tasks' texts are read
	// (Parse), and the stacks of those are the host's.
	out, errb := &remote.Bounded{Max: hostLimit}, &remote.Bounded{Max: 4096}
	rc, err := ex.Run(ctx, "bash -s", strings.NewReader(script), out, errb)
	st := Parse(out.String(), host, secret)
	if err != nil {
		return st, err
	}
	if rc != 0 && len(st) == 0 {
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return st, fmt.Errorf("stacks script exited %d: %s", rc, Inert(msg))
	}
	return st, nil
}

// Script is stacks.sh with its parameters.
func Script(run, secret string, native bool) string {
	nat := "0"
	if native {
		nat = "1"
	}
	return stacksSh.With(
		shscript.Set("tfhive_run", run),
		shscript.Set("tfhive_secret", secret),
		shscript.Set("tfhive_native", nat),
		shscript.Set("tfhive_limit", strconv.Itoa(TaskLimit)),
		shscript.Set("tfhive_wait", strconv.Itoa(int(toolWait/time.Second))),
		shscript.Set("tfhive_procs", strconv.Itoa(taskProcs)),
	)
}

// Parse reads a host's answer: only the lines that are exactly a marker
// with secret open and close a task's text; a task's text is cut at
// TaskLimit whatever the host said.
func Parse(out, host, secret string) []Stack {
	open := markerWord + " " + secret + " task "
	end := markerWord + " " + secret + " end "
	var st []Stack
	var cur *Stack
	var text strings.Builder
	for line := range strings.Lines(out) {
		l := strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(l, open) && validTask(l[len(open):]):
			cur = &Stack{Task: l[len(open):], Host: host}
			text.Reset()
		case cur != nil && l == end+cur.Task:
			cur.Text = Inert(strings.TrimRight(text.String(), "\n") + "\n")
			cur.Where = Where(cur.Text)
			st = append(st, *cur)
			cur = nil
		case cur != nil && text.Len() < TaskLimit:
			text.WriteString(line)
		}
	}
	if cur != nil {
		// The host's answer stopped (cut, or the link went): what came.
		cur.Text = Inert(strings.TrimRight(text.String(), "\n") + "\n(cut short: the host's answer ended here)\n")
		cur.Where = Where(cur.Text)
		st = append(st, *cur)
	}
	return st
}

// validTask: a task id as the plan spells them, role:index; anything
// else a host says is not taken for one.
func validTask(id string) bool {
	role, index, ok := strings.Cut(id, ":")
	if !ok || role == "" || len(id) > 64 {
		return false
	}
	if _, err := strconv.Atoi(index); err != nil || strings.HasPrefix(index, "-") {
		return false
	}
	for _, c := range role {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Inert drops what a terminal would act on: control characters but
// newline and tab, and invalid UTF-8. Thread names and command lines are
// the tasks' own.
func Inert(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\uFFFD' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// Where is where a task was: its main thread's innermost Python frame
// ("in acquire (threading.py:12)"; with --native, the C frames above it
// are passed over), else the first thread's, else its first process's
// wait channel ("wchan do_sys_poll, state S").
func Where(text string) string {
	var first, firstWchan string
	inThread, main, found := false, false, false
	for line := range strings.Lines(text) {
		l := strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(l, "Thread "):
			inThread, main, found = true, strings.Contains(l, `"MainThread"`), false
		case inThread && strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != "":
			frame := strings.TrimSpace(l)
			if found || !pythonFrame(frame) {
				continue
			}
			found = true
			if main {
				return "in " + frame
			}
			if first == "" {
				first = frame
			}
		case strings.HasPrefix(l, "pid ") && firstWchan == "":
			// pid N, state S, wchan W: CMD
			inThread = false
			if _, rest, ok := strings.Cut(l, ", state "); ok {
				state, rest, _ := strings.Cut(rest, ", wchan ")
				wchan, _, _ := strings.Cut(rest, ": ")
				firstWchan = "wchan " + wchan + ", state " + state
			}
		default:
			inThread = false
		}
	}
	if first != "" {
		return "in " + first
	}
	return firstWchan
}

// pythonFrame: py-spy's "function (file.py:LINE)", not a native frame's
// "symbol (libc.so.6)".
func pythonFrame(frame string) bool {
	open := strings.LastIndexByte(frame, '(')
	if open < 0 || !strings.HasSuffix(frame, ")") {
		return false
	}
	file, line, ok := strings.Cut(frame[open+1:len(frame)-1], ":")
	_, err := strconv.Atoi(line)
	return ok && err == nil && file != ""
}
