package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/supervisor/stagetest"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
	"github.com/tfhive/tfhive/schedule"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// redialRunner is a runner of a kept run with only what redial needs, its
// clock stepped by hand: after returns at once, the time moved on by the
// wait asked. waits are the waits, in order.
func redialRunner(reconnect time.Duration, redial func(ctx context.Context, host string) (remote.Executor, error)) (*runner, *[]time.Duration) {
	r := &runner{o: Options{Reconnect: reconnect, Redial: redial}, links: newLinkState(nil, 1)}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	r.links.now = func() time.Time { return clock }
	r.links.after = func(d time.Duration) <-chan time.Time {
		waits = append(waits, d)
		clock = clock.Add(d)
		ch := make(chan time.Time, 1)
		ch <- clock
		return ch
	}
	return r, &waits
}

// A host is redialled at once, then after waits that double from 250ms
// up to 2s, until it answers or the next wait would end past Reconnect:
// then the last error stands.
func TestRedialBackoff(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name      string
		reconnect time.Duration
		failures  int // -1: never answers
		waits     []time.Duration
		err       string
	}{
		{"back at once", time.Hour, 0, nil, ""},
		{"back at the seventh", time.Hour, 6, []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}, ""},
		// 0.25+0.5+1+2 = 3.75s; the next 2s would end at 5.75s.
		{"never, within 5s", 5 * time.Second, -1, []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second}, "refused 5"},
		{"never, within less than the first wait", 250 * ms, -1, nil, "refused 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			back := &remotetest.Fake{}
			r, waits := redialRunner(c.reconnect, func(ctx context.Context, host string) (remote.Executor, error) {
				calls++
				if host != "h1" {
					t.Errorf("redialled %q", host)
				}
				if _, ok := ctx.Deadline(); !ok {
					t.Error("a redial without a deadline")
				}
				if c.failures < 0 || calls <= c.failures {
					return nil, fmt.Errorf("refused %d", calls)
				}
				return back, nil
			})
			r.redial("h1")
			b := <-r.links.back
			if !slices.Equal(*waits, c.waits) {
				t.Errorf("waits %v, want %v", *waits, c.waits)
			}
			switch {
			case b.host != "h1":
				t.Errorf("outcome for %q", b.host)
			case c.err == "" && (b.err != nil || b.ex != back):
				t.Errorf("outcome %v, %v; want the new connection", b.ex, b.err)
			case c.err != "" && (b.err == nil || b.err.Error() != c.err):
				t.Errorf("outcome %v; want %q", b.err, c.err)
			}
		})
	}
}

// Once the run has ended, a redial waiting for its next try gives up.
func TestRedialStopsWithTheRun(t *testing.T) {
	r, _ := redialRunner(time.Hour, func(context.Context, string) (remote.Executor, error) {
		return nil, errors.New("refused")
	})
	r.links.after = func(time.Duration) <-chan time.Time { return nil }
	close(r.links.stop)
	r.redial("h1")
	if b := <-r.links.back; b.err == nil || b.err.Error() != "the run ended" {
		t.Errorf("outcome %v", b.err)
	}
	// A connection that comes back for a host no longer awaited is closed.
	late := &remotetest.Fake{}
	late.Reply(remotetest.Any, "", 0)
	r.hostBack(hostBack{host: "h1", ex: late})
	if _, err := late.Start(context.Background(), "true", nil, nil); err == nil {
		t.Error("the late connection is still open")
	}
}

// keptFakeRun is a fake run kept beyond its sessions: each host's link
// may drop, and redial answers for it (nil: refused).
func keptFakeRun(t *testing.T, plan *schedule.Plan, reconnect time.Duration, redial func(host string, call int) remote.Executor) (*fakeRun, *atomic.Int32) {
	f := newFakeRun(t, plan)
	var calls atomic.Int32
	f.o.Reconnect = reconnect
	// The fake scripts a session per task, not the host's multiplexer.
	f.lim.sessionPerTask = true
	f.o.Redial = func(ctx context.Context, host string) (remote.Executor, error) {
		n := calls.Add(1)
		if ex := redial(host, int(n)); ex != nil {
			return ex, nil
		}
		return nil, errors.New("dial tcp: connection refused")
	}
	return f, &calls
}

// keptStart is a kept supervisor's first session, from go: both streams'
// markers, then the task.
func keptStart(task fakeScript) fakeScript {
	return runs(func(p *fakeProc) {
		p.out(supervisor.StreamMarker + "\n")
		p.errOut(supervisor.StreamMarker + "\n")
		task(p)
	})
}

// A kept run outlives its links: a host whose link drops is redialled,
// and each of its tasks followed again from the first byte not received,
// however often that happens; the lifecycle goes on as if nothing had.
func TestRunReconnects(t *testing.T) {
	var mu sync.Mutex
	attaches := map[string][]string{} // task → "out err gen" asked, in order
	attached := func(s *stagetest.Session) string {
		task := s.V("tfhive_task")
		mu.Lock()
		attaches[task] = append(attaches[task], s.V("tfhive_off_out")+" "+s.V("tfhive_off_err")+" "+s.V("tfhive_gen"))
		mu.Unlock()
		s.ErrOut("bash: warning: setlocale\n") // the login shell's: never the task's
		s.Markers()
		return task
	}
	// The second link drops again, once worker:0 has said epoch 2.
	var second *remotetest.Fake
	second = stagetest.Host(t, func(s *stagetest.Session) int {
		if attached(s) == "worker:0" {
			s.Out("epoch 2\n")
			second.Lose()
			<-s.Over // the link is gone: this session's end is never heard of
			return 0
		}
		return s.UntilStopped()
	})
	var mark string
	third := stagetest.Host(t, func(s *stagetest.Session) int {
		if attached(s) == "worker:0" {
			mark = s.V("tfhive_mark")
			s.Out("epoch 3\n")
			// The host's files could not take it all.
			s.ErrOut(supervisor.TruncatedMarker + s.V("tfhive_mark") + "\n")
			return 0
		}
		return s.UntilStopped()
	})
	f, calls := keptFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"), time.Minute, func(host string, call int) remote.Executor {
		if host != "h1" {
			t.Errorf("redialled %s", host)
		}
		switch call {
		case 2:
			return second
		case 3:
			return third
		}
		return nil // the first try after a drop fails
	})
	lost := make(chan struct{})
	f.host("h1").script("worker:0", keptStart(func(p *fakeProc) {
		p.out("epoch 1\n")
		p.errOut("warn 1\n")
		p.lose()
		close(lost)
	}))
	f.host("h1").script("ps:0", keptStart(func(p *fakeProc) {
		p.out("ps up\n")
		<-lost // the same link
		p.lose()
	}))
	f.host("h2").script("worker:1", keptStart(exits(0, "w1 done\n")))

	s, console := f.mustRun(context.Background())
	wantSummary(t, s, record.ResultSucceeded, 0, "every worker exited 0", "ps:0 stopped 143", "worker:0 exited 0", "worker:1 exited 0")
	if !s.Tasks[1].LogTruncated || s.Tasks[0].LogTruncated {
		t.Errorf("log truncated: ps:0 %v, worker:0 %v", s.Tasks[0].LogTruncated, s.Tasks[1].LogTruncated)
	}
	wantLines(t, "console", console,
		"tfhive: lost the connection to h1 (connection lost before the command finished); reconnecting for up to 1m0s\n",
		"tfhive: h1 is back after ")
	if strings.Contains(console, "setlocale") || strings.Contains(console, "@@tfhive") {
		t.Errorf("a session's own words reached the console:\n%s", console)
	}
	// Every byte once, in order.
	if b, err := os.ReadFile(filepath.Join(f.o.LogDir, "worker-0.log")); err != nil || string(b) != "epoch 1\nwarn 1\nepoch 2\nepoch 3\n" {
		t.Errorf("worker-0.log %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.o.LogDir, "ps-0.log")); err != nil || string(b) != "ps up\n" {
		t.Errorf("ps-0.log %q, %v", b, err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d redials, want 3", n)
	}
	if f.o.Execs["h1"] != third {
		t.Error("the run's connection to h1 is not the last one dialled")
	}
	mu.Lock()
	if got := attaches["worker:0"]; !slices.Equal(got, []string{"8 7 1", "16 7 1"}) {
		t.Errorf("worker:0 followed from %q", got)
	}
	if got := attaches["ps:0"]; len(got) == 0 || slices.ContainsFunc(got, func(a string) bool { return a != "6 0 1" }) {
		t.Errorf("ps:0 followed from %q", got)
	}
	mu.Unlock()
	// The kept tasks' first sessions: kept for Reconnect and the
	// keepalive period, marked with the run's word; the first task on
	// each host describes the run for a keeper that adopts it.
	ps, w0 := f.proc("ps:0"), f.proc("worker:0")
	wantLines(t, "ps:0's task stage", ps.runStage, "tfhive_keep=61\n", "tfhive_mark="+mark+"\n", `tfhive_runinfo='{"run_id":"r1",`)
	wantLines(t, "worker:0's task stage", w0.runStage, "tfhive_runinfo=''\n")
}

// A host that does not answer within Reconnect is lost, and so are its
// tasks; an attach session that finds its task's supervisor gone loses
// that task with what it said.
func TestRunReconnectLoses(t *testing.T) {
	gone := stagetest.Host(t, func(s *stagetest.Session) int {
		s.ErrOut("tfhive: the supervisor of task worker:0 is gone without a status (its host rebooted, or it was killed)\n")
		return 125
	})
	for _, c := range []struct {
		name, why string
		redial    func(host string, call int) remote.Executor
	}{
		{"no answer", "no connection for 300ms (dial tcp: connection refused)",
			func(string, int) remote.Executor { return nil }},
		{"the supervisor gone", "the supervisor of task worker:0 is gone without a status (its host rebooted, or it was killed)",
			func(string, int) remote.Executor { return gone }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _ := keptFakeRun(t, scheduletest.TF("ps:0@h2", "worker:0@h1", "worker:1@h2"), 300*time.Millisecond, c.redial)
			f.host("h1").script("worker:0", keptStart(func(p *fakeProc) {
				p.out("epoch 1\n")
				p.lose()
			}))
			for _, id := range []string{"ps:0", "worker:1"} {
				f.host("h2").script(id, keptStart(untilStopped))
			}
			s, console := f.mustRun(context.Background())
			wantSummary(t, s, record.ResultFailed, record.ExitHostLost, "worker:0 on h1 was lost: "+c.why,
				"worker:0 lost: "+c.why, "ps:0 stopped 143", "worker:1 stopped 143")
			if c.name == "no answer" {
				wantLines(t, "console", console, "tfhive: gave up on h1: "+c.why+"\n")
			}
		})
	}
}

// Why an attach session found nothing to follow is its own "tfhive: "
// line, whatever a login shell wrote to stderr before it: "replaced by
// keeper generation N" must be seen as such for a keeper to step down.
func TestAttachFailedSaysWhy(t *testing.T) {
	for _, c := range []struct{ noise, want string }{
		{"tfhive: replaced by keeper generation 4\n", "replaced by keeper generation 4"},
		{"bash: warning: setlocale: LC_ALL: cannot change locale\ntfhive: replaced by keeper generation 4\n", "replaced by keeper generation 4"},
		{"stty: not a tty\ntfhive: no trace of task worker:0 in /h/.tfhive/runs/r1", "no trace of task worker:0 in /h/.tfhive/runs/r1"},
		{"  Segmentation fault\nmore\n", "Segmentation fault"},
		{"", "its supervisor could not be found again"},
	} {
		var rt runTask
		rt.attachNoise.Write([]byte(c.noise))
		if got := rt.attachFailed(); got != c.want {
			t.Errorf("%q: %q, want %q", c.noise, got, c.want)
		}
	}
}
