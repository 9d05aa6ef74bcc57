package launcher

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// pollFor bounds pollUntil: a regression fails the test, not -timeout.
const pollFor = 20 * time.Second

// pollUntil checks ok every 10 ms until it holds (true) or pollFor has
// passed (false). The caller fails the test from its own goroutine.
func pollUntil(ok func() bool) bool {
	for deadline := time.Now().Add(pollFor); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

var secretRE = regexp.MustCompile(`tfhive_secret='?([A-Za-z0-9]+)`)

// stacksHost answers the stacks script as a host running task id would
// (py-spy's dump, behind this call's word), counting the calls.
func stacksHost(id, frame string, calls *atomic.Int32) func(string, io.Reader, io.Writer, io.Writer) (int, error) {
	return func(cmd string, stdin io.Reader, stdout, _ io.Writer) (int, error) {
		b, _ := io.ReadAll(stdin)
		calls.Add(1)
		m := secretRE.FindSubmatch(b)
		if cmd != "bash -s" || m == nil {
			return 2, nil
		}
		w := string(m[1])
		io.WriteString(stdout, "@@tfhive-stacks "+w+" task "+id+"\nThread 1 (idle): \"MainThread\"\n    "+frame+"\n@@tfhive-stacks "+w+" end "+id+"\n")
		return 0, nil
	}
}

// --on-hang warn: the stacks are taken once per silence, on every host,
// into the log dir and the timeline; the run goes on, and a task heard
// again makes the next silence count anew.
func TestHangWarnsOncePerSilence(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1", "worker:1@h2"))
	f.o.Hang = Hang{After: 200 * time.Millisecond}
	var calls [2]atomic.Int32
	f.host("h1").run = stacksHost("worker:0", "allreduce (train.py:7)", &calls[0])
	f.host("h2").run = stacksHost("worker:1", "recv (train.py:9)", &calls[1])
	first := f.console.seen("looks hung")
	speak := make(chan struct{})
	f.host("h1").script("worker:0", runs(func(p *fakeProc) {
		p.out("step 1\n")
		<-speak
		p.out("step 2\n")
		untilStopped(p)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Whatever fails, the run is ended (worker:0 let go first), so
		// that the test fails rather than waits for -timeout.
		spoke := false
		defer func() {
			if !spoke {
				close(speak)
			}
			cancel()
		}()
		select {
		case <-first:
		case <-time.After(pollFor):
			t.Errorf("no warning in %s", pollFor)
			return
		}
		// The warning said, nothing more is taken until a task is heard:
		// not in the next 50 heartbeats (10 ms apart), two of the
		// watcher's ticks (250 ms) at least.
		p := f.proc("worker:1")
		beats := func() int { return strings.Count(strings.Join(p.sawLines(), ","), "h") }
		from := beats()
		if !pollUntil(func() bool { return beats() >= from+50 }) {
			t.Errorf("no 50 heartbeats in %s", pollFor)
			return
		}
		if n := calls[0].Load(); n != 1 {
			t.Errorf("%d takings on h1 before the task spoke again, want 1", n)
		}
		second := f.console.seen("step 2")
		close(speak)
		spoke = true
		select {
		case <-second:
		case <-time.After(pollFor):
			t.Errorf("no step 2 on the console in %s", pollFor)
			return
		}
		if !pollUntil(func() bool { return strings.Count(f.console.String(), "looks hung") >= 2 }) {
			t.Errorf("no second warning in %s after the task spoke again:\n%s", pollFor, f.console.String())
		}
	}()
	sum, console := f.mustRun(ctx)
	if sum.Result != record.ResultInterrupted {
		t.Errorf("result %s, want interrupted: a warning stops nothing\n%s", sum.Result, console)
	}
	if calls[0].Load() != 2 || calls[1].Load() != 2 {
		t.Errorf("takings %d and %d, want 2 on each host", calls[0].Load(), calls[1].Load())
	}
	for _, want := range []string{"no task printed anything for", "worker:0 in allreduce (train.py:7)", "worker:1 in recv (train.py:9)",
		"tfhive: warning: run " + f.o.Plan.RunID + " looks hung: no output for"} {
		if !strings.Contains(console, want) {
			t.Errorf("console lacks %q:\n%s", want, console)
		}
	}
	text, err := os.ReadFile(filepath.Join(f.o.LogDir, "stacks", "worker-1.txt"))
	if err != nil || !strings.Contains(string(text), "task worker:1 on h2\n") || !strings.Contains(string(text), "recv (train.py:9)") {
		t.Errorf("stacks/worker-1.txt (%v):\n%s", err, text)
	}
	if got := taskResult(sum, "worker:0").HungAt; got != "in allreduce (train.py:7)" {
		t.Errorf("worker:0 hung at %q", got)
	}
	events, _ := os.ReadFile(filepath.Join(f.o.LogDir, "events.csv"))
	if n := strings.Count(string(events), ",,,hang,no output for "); n != 2 || !strings.Contains(string(events), "; worker:0 in allreduce (train.py:7)\n") {
		t.Errorf("%d run hang events, want 2:\n%s", n, events)
	}
}

func taskResult(s *record.Summary, id string) record.TaskResult {
	for _, t := range s.Tasks {
		if t.ID == id {
			return t
		}
	}
	return record.TaskResult{}
}
