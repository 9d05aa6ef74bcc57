package launcher

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// The run lifecycle in-process: Run against fake hosts (fake_test.go)
// whose supervisors act out scripts. No timing is asserted: a script that
// must wait for something waits for it (a console line, a control line),
// and a grace period that matters is either an hour (never reached) or
// reached by a task that ignores SIGTERM.

// watchWriter is a console that tells when a line has come.
type watchWriter struct {
	mu    sync.Mutex
	b     bytes.Buffer
	waits []watch
}

type watch struct {
	s  string
	ch chan struct{}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	w.check()
	return len(p), nil
}

func (w *watchWriter) check() {
	kept := w.waits[:0]
	for _, x := range w.waits {
		if strings.Contains(w.b.String(), x.s) {
			close(x.ch)
		} else {
			kept = append(kept, x)
		}
	}
	w.waits = kept
}

// seen is closed once s is on the console.
func (w *watchWriter) seen(s string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.waits = append(w.waits, watch{s, ch})
	w.check()
	return ch
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// fakeRun is a run on fake hosts, one per host of the plan.
type fakeRun struct {
	t       *testing.T
	o       Options
	lim     limits
	console *watchWriter
	hosts   map[string]*fakeHost
}

func newFakeRun(t *testing.T, plan *schedule.Plan) *fakeRun {
	f := &fakeRun{t: t, console: &watchWriter{}, hosts: map[string]*fakeHost{}, lim: defaultLimits}
	f.o = Options{
		Plan: plan, Hosts: map[string]inventory.Host{}, LogDir: filepath.Join(t.TempDir(), "logs"),
		Grace: time.Hour, Parallel: 4, Console: NewConsole(f.console, false),
		KeepAlive: func(inventory.Host) (time.Duration, int) { return 10 * time.Millisecond, 3 },
	}
	var hosts []*fakeHost
	for _, name := range plan.Hosts() {
		var ids []string
		for _, task := range plan.Tasks {
			if task.Host == name {
				ids = append(ids, task.ID)
			}
		}
		h := newFakeHost(name, ids...)
		f.hosts[name] = h
		hosts = append(hosts, h)
		f.o.Hosts[name] = inventory.Host{Name: name, Env: map[string]string{"FROM_HOSTS_FILE": "file-" + name}}
	}
	f.o.Execs = fakeExecs(hosts...)
	return f
}

func (f *fakeRun) host(name string) *fakeHost { return f.hosts[name] }

// proc is the supervisor of task id, wherever it ran.
func (f *fakeRun) proc(id string) *fakeProc {
	for _, h := range f.hosts {
		if p := h.proc(id); p != nil {
			return p
		}
	}
	f.t.Fatalf("task %s never got its input", id)
	return nil
}

// run runs and returns the summary, the error and the whole console.
func (f *fakeRun) run(ctx context.Context) (*record.Summary, error, string) {
	f.t.Helper()
	var sum *record.Summary
	var err error
	if f.lim == defaultLimits {
		sum, err = RunPlan(ctx, f.o)
	} else {
		sum, err = runWith(ctx, f.o, f.lim)
	}
	if cerr := f.o.Console.Close(); cerr != nil {
		f.t.Fatal(cerr)
	}
	return sum, err, f.console.String()
}

// mustRun runs a run that must end with a summary, and checks
// summary.json is that summary.
func (f *fakeRun) mustRun(ctx context.Context) (*record.Summary, string) {
	f.t.Helper()
	sum, err, console := f.run(ctx)
	if err != nil || sum == nil {
		f.t.Fatalf("Run: %v, %v\n%s", sum, err, console)
	}
	var want bytes.Buffer
	record.WriteSummaryJSON(&want, sum)
	got, err := os.ReadFile(filepath.Join(f.o.LogDir, rundir.Summary))
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		f.t.Errorf("summary.json (%v):\n%s\nwant\n%s", err, got, want.Bytes())
	}
	if _, err := os.Stat(filepath.Join(f.o.LogDir, rundir.Plan)); err != nil {
		f.t.Error(err)
	}
	return sum, console
}

// outcomes lists "id outcome code" or "id outcome: error" in summary
// order.
func outcomes(s *record.Summary) []string {
	var l []string
	for _, t := range s.Tasks {
		o := t.ID + " " + t.Outcome
		if t.ExitCode != nil {
			o += " " + strconv.Itoa(*t.ExitCode)
		}
		if t.Error != "" {
			o += ": " + t.Error
		}
		l = append(l, o)
	}
	return l
}

func wantSummary(t *testing.T, s *record.Summary, result string, code int, reason string, tasks ...string) {
	t.Helper()
	if s.Result != result || s.ExitCode != code || s.Reason != reason {
		t.Errorf("summary %s %d %q, want %s %d %q", s.Result, s.ExitCode, s.Reason, result, code, reason)
	}
	if got := outcomes(s); !slices.Equal(got, tasks) {
		t.Errorf("tasks\n %q\nwant\n %q", got, tasks)
	}
}

func wantLines(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, l) {
			t.Errorf("%s lacks %q:\n%s", what, l, text)
		}
	}
}

// controls lists the control lines a supervisor got, heartbeats left out.
func controls(p *fakeProc) string {
	var l []string
	for _, c := range p.sawLines() {
		if c != "h" {
			l = append(l, c)
		}
	}
	return strings.Join(l, " ")
}

func TestRunSucceeds(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"))
	f.o.Env = map[string]string{"FROM_CLI": "cli-value"}
	f.o.Workdir = "/work/dir"
	f.host("h1").script("worker:0", func(p *fakeProc) {
		// A login shell's rc file may print before the supervisor says a
		// word: that is the task's output, not the claim line.
		p.out("motd from rc\n")
		if p.claimed() {
			p.out("hello from worker:0\n")
			p.errOut("warning on stderr\n")
			// A heartbeat comes, at the keepalive interval.
			<-p.heard
			p.exit(0)
		}
	})
	f.host("h2").script("worker:1", runs(exits(0, "hello from worker:1\n")))
	s, console := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultSucceeded, 0, "every worker exited 0",
		"ps:0 stopped 143", "worker:0 exited 0", "worker:1 exited 0")
	wantLines(t, "console", console,
		"tfhive: run r1: 3 tasks on 2 hosts, logs in "+f.o.LogDir+"\n",
		"[worker:0 h1] motd from rc\n", "[worker:0 h1] hello from worker:0\n", "[worker:0 h1] warning on stderr\n",
		"[worker:1 h2] hello from worker:1\n")
	if strings.Contains(console, supervisor.ClaimMarker) {
		t.Errorf("the claim line reached the console:\n%s", console)
	}
	log, err := os.ReadFile(filepath.Join(f.o.LogDir, "worker-0.log"))
	if err != nil || string(log) != "motd from rc\nhello from worker:0\nwarning on stderr\n" {
		t.Errorf("worker-0.log %q, %v", log, err)
	}
	if s.Tasks[1].Log != filepath.Join(f.o.LogDir, "worker-0.log") || s.Tasks[1].Host != "h1" || s.LogDir != f.o.LogDir || s.RunID != "r1" {
		t.Errorf("summary %+v", s)
	}
	for id, want := range map[string]string{"ps:0": "g t", "worker:0": "g", "worker:1": "g"} {
		if got := controls(f.proc(id)); got != want {
			t.Errorf("%s got %q, want %q", id, got, want)
		}
	}
	// The task stage carries the environment, layered: hosts file, --env,
	// the plan's own.
	wantLines(t, "worker:1's task stage", f.proc("worker:1").runStage, "file-h2", "cli-value", "worker:1", "/work/dir")
	var buf bytes.Buffer
	view.WriteSummary(&buf, s)
	wantLines(t, "summary table", buf.String(), "OUTCOME", "stopped  ", "run r1 succeeded: every worker exited 0 (exit 0)")
	if strings.Contains(buf.String(), "stopped 143") {
		t.Errorf("a stopped task's code in the table:\n%s", buf.String())
	}
}

func TestRunFailures(t *testing.T) {
	stopOnLine := func(f *fakeRun, line string, s fakeScript) fakeScript {
		return runs(after(f.console.seen(line), s))
	}
	for _, c := range []struct {
		name   string
		plan   *schedule.Plan
		script func(f *fakeRun)
		result string
		code   int
		reason string
		tasks  []string
		lines  []string
	}{
		{
			name: "a worker fails",
			plan: scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"),
			script: func(f *fakeRun) {
				f.host("h2").script("worker:1", runs(func(p *fakeProc) { p.errOut("dying\n"); p.exit(9) }))
			},
			result: record.ResultFailed, code: 9, reason: "worker:1 on h2 exited 9",
			tasks: []string{"worker:1 exited 9", "ps:0 stopped 143", "worker:0 stopped 143"},
			lines: []string{"[worker:1 h2] dying\n", "tfhive: worker:1 on h2 exited 9; stopping the other tasks\n"},
		},
		{
			name: "a ps fails",
			plan: scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"),
			script: func(f *fakeRun) {
				f.host("h1").script("ps:0", runs(exits(1, "")))
			},
			result: record.ResultFailed, code: 1, reason: "ps:0 on h1 exited 1",
			tasks: []string{"ps:0 exited 1", "worker:0 stopped 143", "worker:1 stopped 143"},
			lines: []string{"tfhive: ps:0 on h1 exited 1; stopping the other tasks\n"},
		},
		{
			name: "a worker is killed by a signal",
			plan: scheduletest.TF("worker:0@h1", "worker:1@h2"),
			script: func(f *fakeRun) {
				f.host("h1").script("worker:0", runs(exits(137, "")))
			},
			result: record.ResultFailed, code: 137, reason: "worker:0 on h1 was killed by signal 9 (exit 137)",
			tasks: []string{"worker:0 exited 137", "worker:1 stopped 143"},
		},
		{
			name: "a host is lost",
			plan: scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"),
			script: func(f *fakeRun) {
				f.host("h2").script("worker:1", runs((*fakeProc).lose))
			},
			result: record.ResultFailed, code: record.ExitHostLost, reason: "worker:1 on h2 was lost: connection lost before the command finished",
			tasks: []string{"worker:1 lost: connection lost before the command finished", "ps:0 stopped 143", "worker:0 stopped 143"},
			lines: []string{"tfhive: worker:1 on h2 was lost: connection lost before the command finished; stopping the other tasks\n"},
		},
		{
			name: "an evaluator failing is not fatal",
			plan: scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2", "evaluator:0@h2"),
			script: func(f *fakeRun) {
				f.host("h2").script("evaluator:0", runs(exits(2, "")))
				ok := stopOnLine(f, "(not fatal for the run)", exits(0, ""))
				f.host("h1").script("worker:0", ok)
				f.host("h2").script("worker:1", ok)
			},
			result: record.ResultSucceeded, code: 0, reason: "every worker exited 0",
			tasks: []string{"ps:0 stopped 143", "worker:0 exited 0", "worker:1 exited 0", "evaluator:0 exited 2"},
			lines: []string{"tfhive: evaluator:0 on h2 exited 2 (not fatal for the run)\n"},
		},
		{
			name: "chief mode: a worker failing is not fatal, the chief decides",
			plan: scheduletest.TF("chief:0@h1", "ps:0@h1", "worker:0@h2", "worker:1@h2"),
			script: func(f *fakeRun) {
				f.host("h2").script("worker:1", runs(exits(1, "")))
				f.host("h1").script("chief:0", stopOnLine(f, "(not fatal for the run)", exits(0, "")))
			},
			result: record.ResultSucceeded, code: 0, reason: "the chief exited 0",
			tasks: []string{"chief:0 exited 0", "ps:0 stopped 143", "worker:0 stopped 143", "worker:1 exited 1"},
			lines: []string{"tfhive: worker:1 on h2 exited 1 (not fatal for the run)\n"},
		},
		{
			name: "torch: every rank exits 0",
			plan: scheduletest.Plan(schedule.FrameworkTorch, "worker:0@h1", "worker:1@h1", "worker:2@h2"),
			script: func(f *fakeRun) {
				f.host("h1").script("worker:0", runs(exits(0, ""))).script("worker:1", runs(exits(0, "")))
				f.host("h2").script("worker:2", runs(exits(0, "")))
			},
			result: record.ResultSucceeded, code: 0, reason: "every rank exited 0",
			tasks: []string{"worker:0 exited 0", "worker:1 exited 0", "worker:2 exited 0"},
		},
		{
			name: "torch: one rank fails",
			plan: scheduletest.Plan(schedule.FrameworkTorch, "worker:0@h1", "worker:1@h1", "worker:2@h2"),
			script: func(f *fakeRun) {
				f.host("h2").script("worker:2", runs(exits(3, "")))
			},
			result: record.ResultFailed, code: 1, reason: "worker:2 on h2 exited 3, one of tfhive's own codes",
			tasks: []string{"worker:2 exited 3", "worker:0 stopped 143", "worker:1 stopped 143"},
		},
		{
			name: "a supervisor that ends before claiming fails the run after go",
			plan: scheduletest.TF("worker:0@h1", "worker:1@h2"),
			script: func(f *fakeRun) {
				f.host("h2").script("worker:1", func(p *fakeProc) {
					p.errOut("tfhive: bash not found on this host\n")
					p.exit(127)
				})
			},
			result: record.ResultFailed, code: 127, reason: "worker:1 on h2 exited 127",
			tasks: []string{"worker:1 exited 127", "worker:0 stopped 143"},
			lines: []string{"[worker:1 h2] tfhive: bash not found on this host\n"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeRun(t, c.plan)
			c.script(f)
			s, console := f.mustRun(context.Background())
			wantSummary(t, s, c.result, c.code, c.reason, c.tasks...)
			wantLines(t, "console", console, c.lines...)
		})
	}
}

func TestRunTimeout(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h2"))
	f.o.Timeout = 20 * time.Millisecond
	s, _ := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultTimeout, record.ExitTimeout, "timed out after 20ms", "ps:0 stopped 143", "worker:0 stopped 143")
}

// A task that ignores SIGTERM is killed once the grace period is over.
func TestRunKillsAfterGrace(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1", "worker:1@h2"))
	f.o.Timeout, f.o.Grace = time.Millisecond, time.Millisecond
	f.host("h2").script("worker:1", runs(ignoresTerm))
	s, _ := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultTimeout, record.ExitTimeout, "timed out after 1ms", "worker:0 stopped 143", "worker:1 stopped 137")
	if got := controls(f.proc("worker:1")); got != "g t k" {
		t.Errorf("worker:1 got %q", got)
	}
}

// A task that does not go even when killed (its host stopped answering)
// is abandoned a while later: tfhive must end.
func TestRunGivesUpOnATaskThatStays(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.o.Timeout, f.o.Grace, f.lim.giveUp = time.Millisecond, time.Millisecond, time.Millisecond
	f.host("h1").script("worker:0", runs(hangs))
	s, _ := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultTimeout, record.ExitTimeout, "timed out after 1ms", "worker:0 lost: abandoned before the command finished")
}

func TestRunInterrupted(t *testing.T) {
	for _, c := range []struct {
		name   string
		cause  error
		result string
		code   int
		reason string
	}{
		{"SIGINT", Interrupt(syscall.SIGINT), record.ResultInterrupted, 130, "interrupted by SIGINT"},
		{"SIGTERM", Interrupt(syscall.SIGTERM), record.ResultInterrupted, 143, "interrupted by SIGTERM"},
		{"no signal named", nil, record.ResultInterrupted, 130, "interrupted"},
		{"another cause", errors.New("shutting down"), record.ResultInterrupted, 130, "interrupted"},
		{"stdout closed", Interrupt(StdoutClosed), record.ResultStdoutClosed, record.ExitStdoutClosed, "standard output closed (a pipe reader such as head ended)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			// Stopped once every task runs: the run line is printed
			// after go.
			go func() {
				<-f.console.seen("tfhive: run r1:")
				cancel(c.cause)
			}()
			s, console := f.mustRun(ctx)
			wantSummary(t, s, c.result, c.code, c.reason, "ps:0 stopped 143", "worker:0 stopped 143", "worker:1 stopped 143")
			if strings.Contains(console, "killing") {
				t.Errorf("a first interrupt kills nothing:\n%s", console)
			}
		})
	}
}

// A second interrupt kills at once, whatever the grace period.
func TestRunKillNow(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1", "worker:1@h2"))
	f.host("h1").script("worker:0", runs(ignoresTerm))
	f.host("h2").script("worker:1", runs(ignoresTerm))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	killNow := make(chan struct{})
	f.o.KillNow = killNow
	go func() {
		<-f.console.seen("tfhive: run r1:")
		cancel(Interrupt(syscall.SIGINT))
		<-f.proc("worker:0").gotTerm
		<-f.proc("worker:1").gotTerm
		close(killNow)
	}()
	s, console := f.mustRun(ctx)
	wantSummary(t, s, record.ResultInterrupted, 130, "interrupted by SIGINT", "worker:0 stopped 137", "worker:1 stopped 137")
	wantLines(t, "console", console, "tfhive: killing every task now\n")
}

// Both interrupts in before the run looks: the first still names the
// signal.
func TestRunInterruptedTwiceAtOnce(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.host("h1").script("worker:0", runs(ignoresTerm))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(Interrupt(syscall.SIGTERM))
	killNow := make(chan struct{})
	close(killNow)
	f.o.KillNow = killNow
	s, console := f.mustRun(ctx)
	wantSummary(t, s, record.ResultInterrupted, 143, "interrupted by SIGTERM", "worker:0 stopped 137")
	wantLines(t, "console", console, "tfhive: killing every task now\n")
	if got := controls(f.proc("worker:0")); got != "g t k" {
		t.Errorf("worker:0 got %q", got)
	}
}

// A second interrupt with no first one: killed all the same.
func TestRunKillNowAlone(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.host("h1").script("worker:0", runs(ignoresTerm))
	killNow := make(chan struct{})
	f.o.KillNow = killNow
	go func() {
		<-f.console.seen("tfhive: run r1:")
		close(killNow)
	}()
	s, _ := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultInterrupted, 130, "interrupted", "worker:0 stopped 137")
}

// Another run holds a claim: nobody gets go, every supervisor lets go,
// and Run returns the conflict, no summary.
func TestRunClaimConflicts(t *testing.T) {
	for _, c := range []struct {
		name   string
		script fakeScript
		want   string
		check  func(error) bool
	}{
		{"taken", func(p *fakeProc) { p.exit(supervisor.ExitClaimBusy) },
			"claimed by another run while starting: h2 (one of gpu 1, port 2224)",
			func(err error) bool { var e *lifecycle.ClaimConflictError; return errors.As(err, &e) }},
		{"blocked", func(p *fakeProc) {
			p.out(supervisor.ClaimBlocked + "/tmp/tfhive-gpu-x.lock is not a regular file (owned by eve)\n")
			p.exit(76)
		},
			"h2: /tmp/tfhive-gpu-x.lock is not a regular file (owned by eve); ask its owner or root to remove it",
			func(err error) bool { var e *lifecycle.ClaimBlockedError; return errors.As(err, &e) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"))
			f.host("h2").script("worker:1", c.script)
			s, err, console := f.run(context.Background())
			if s != nil || err == nil || err.Error() != c.want || !c.check(err) {
				t.Fatalf("Run: %v, %v; want %q", s, err, c.want)
			}
			for _, id := range []string{"ps:0", "worker:0"} {
				if got := controls(f.proc(id)); got != "a" {
					t.Errorf("%s got %q, want only abort", id, got)
				}
			}
			if _, err := os.Stat(filepath.Join(f.o.LogDir, rundir.Summary)); !os.IsNotExist(err) {
				t.Errorf("summary.json written for a run that never ran: %v", err)
			}
			if strings.Contains(console, "tfhive: run r1:") {
				t.Errorf("console:\n%s", console)
			}
		})
	}
}

func TestRunTaskCannotStart(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(f *fakeRun)
		err   string
	}{
		{"no connection", func(f *fakeRun) { delete(f.o.Execs, "h2") }, "no connection to h2"},
		{"start fails", func(f *fakeRun) { f.host("h2").startErr = errors.New("ssh: start: sshd refused to run the command") },
			"ssh: start: sshd refused to run the command"},
		{"stdin fails", func(f *fakeRun) { f.host("h2").stdinErr = errors.New("EOF") }, "sending the task: EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"))
			c.setup(f)
			s, console := f.mustRun(context.Background())
			wantSummary(t, s, record.ResultFailed, 1, "worker:1 on h2 could not start: "+c.err,
				"worker:1 not-started: "+c.err, "ps:0 stopped 75", "worker:0 stopped 75")
			wantLines(t, "console", console, "tfhive: worker:1 on h2 could not start: "+c.err+"\n")
			for _, id := range []string{"ps:0", "worker:0"} {
				if got := controls(f.proc(id)); got != "t" {
					t.Errorf("%s got %q: it must never start", id, got)
				}
			}
		})
	}
}

// A session that ends before it gets its task (the probe's spare, ended
// meanwhile) is replaced by a fresh one, once: the run goes on.
func TestRunSessionEndedBeforeItsTask(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"))
	f.host("h2").stdinErrOnce = errors.New("EOF")
	f.host("h1").script("worker:0", exits(0, ""))
	f.host("h2").script("worker:1", exits(0, ""))
	s, _ := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultSucceeded, 0, "every worker exited 0", "ps:0 stopped 143", "worker:0 exited 0", "worker:1 exited 0")
}

// A host whose supervisor never answers (a hung login shell) is given up
// after the keepalive period, never holding the run at the claim phase.
func TestRunHostNeverAnswers(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.lim.minAnswer, f.lim.login = 20*time.Millisecond, 20*time.Millisecond
	f.o.KeepAlive = func(inventory.Host) (time.Duration, int) { return time.Millisecond, 1 }
	f.host("h1").script("worker:0", hangs)
	s, console := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultFailed, record.ExitHostLost, "worker:0 on h1 was lost: no answer from the host within 20ms",
		"worker:0 lost: no answer from the host within 20ms")
	wantLines(t, "console", console, "tfhive: worker:0 on h1 was lost: no answer from the host within 20ms; stopping the other tasks\n")
	if !f.proc("worker:0").wasKilled() {
		t.Error("the silent supervisor was not killed")
	}
}

// A host slow to log in (conda's init on a host busy with logins) is
// not lost while its session has said nothing: the no-answer clock
// starts at the session's first byte.
func TestRunSlowLoginIsNotLost(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.lim.minAnswer, f.lim.login = 20*time.Millisecond, time.Minute
	f.o.KeepAlive = func(inventory.Host) (time.Duration, int) { return time.Millisecond, 1 }
	slow := func(p *fakeProc) {
		time.Sleep(200 * time.Millisecond) // ten times minAnswer, well within login
		runs(exits(0, "done\n"))(p)
	}
	f.host("h1").script("worker:0", slow)
	s, _ := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultSucceeded, 0, "every worker exited 0", "worker:0 exited 0")
}

// Once a session has said something (its login shell has started), its
// supervisor has the usual time to answer, however long the login limit.
func TestRunAnswerCountsFromTheFirstByte(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.lim.minAnswer, f.lim.login = 20*time.Millisecond, time.Hour
	f.o.KeepAlive = func(inventory.Host) (time.Duration, int) { return time.Millisecond, 1 }
	f.host("h1").script("worker:0", func(p *fakeProc) {
		p.errOut("conda: environment base\n")
		hangs(p)
	})
	s, _ := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultFailed, record.ExitHostLost, "worker:0 on h1 was lost: no answer from the host within 20ms",
		"worker:0 lost: no answer from the host within 20ms")
}

func TestRunCannotWriteLogs(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	f.o.LogDir = filepath.Join(file, "logs")
	if s, err, _ := f.run(context.Background()); s != nil || err == nil || !strings.HasPrefix(err.Error(), "log dir: ") {
		t.Errorf("Run: %v, %v", s, err)
	}
	if f.host("h1").proc("worker:0") != nil {
		t.Error("a task started without its log dir")
	}
}

func TestInterruptNamesTheSignal(t *testing.T) {
	if got := Interrupt(syscall.SIGTERM).Error(); got != "interrupted by SIGTERM" {
		t.Errorf("%q", got)
	}
	if got := Interrupt(StdoutClosed).Error(); got != "standard output closed (a pipe reader such as head ended)" {
		t.Errorf("%q", got)
	}
}

// The caller's signals are named for the policy: SIGTERM as itself, any
// other as SIGINT.
func TestSignalOf(t *testing.T) {
	for sig, want := range map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"} {
		if got := signalOf(sig).String(); got != want {
			t.Errorf("signalOf(%v) = %q", sig, got)
		}
	}
	if signalOf(StdoutClosed) != lifecycle.SigStdoutClosed || signalOf(nil) != lifecycle.SigNone {
		t.Errorf("StdoutClosed or nil misnamed")
	}
}
