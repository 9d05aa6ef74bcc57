package launcher

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
)

func TestParseRestartOn(t *testing.T) {
	on, err := ParseRestartOn("1-127, 137,200-201")
	if err != nil {
		t.Fatal(err)
	}
	rs := Restart{Max: 1, On: on}
	for code, want := range map[int]bool{0: false, 1: true, 127: true, 128: false, 137: true, 143: false, 200: true, 201: true, 202: false} {
		if got := rs.restarts(code, false); got != want {
			t.Errorf("code %d restarts: %v, want %v", code, got, want)
		}
	}
	if rs.restarts(0, true) {
		t.Error("a lost host restarts without lost in --restart-on")
	}
	on, err = ParseRestartOn("lost")
	if err != nil {
		t.Fatal(err)
	}
	if lost := (Restart{Max: 1, On: on}); !lost.restarts(0, true) || lost.restarts(1, false) {
		t.Error("--restart-on lost: a lost host must restart, an exit not")
	}
	on, _ = ParseRestartOn("1-127,lost")
	if both := (Restart{Max: 1, On: on}); !both.restarts(0, true) || !both.restarts(3, false) || both.restarts(137, false) {
		t.Error("--restart-on 1-127,lost: a lost host and codes 1-127 restart, 137 not")
	}
	if (Restart{Max: 1}).restarts(0, true) != true || (Restart{On: on}).restarts(0, true) {
		t.Error("a lost host restarts by default with --restarts, and never without")
	}
	for _, bad := range []string{"", "0", "1-", "x", "3-2", "256", "1-300", "-1", "losts", "lost-1"} {
		if _, err := ParseRestartOn(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	any := Restart{Max: 2}
	if !any.restarts(1, false) || !any.restarts(255, false) || any.restarts(0, false) {
		t.Error("with no --restart-on, any failure restarts, success does not")
	}
	if (Restart{}).restarts(1, false) {
		t.Error("--restarts 0 restarts")
	}
}

func TestRestartBackoff(t *testing.T) {
	rs := Restart{Max: 20, Backoff: 10 * time.Second}
	var got []string
	for n := 1; n <= 7; n++ {
		got = append(got, rs.backoff(n).String())
	}
	if want := "10s 20s 40s 1m20s 2m40s 5m0s 5m0s"; strings.Join(got, " ") != want {
		t.Errorf("backoffs %s, want %s", strings.Join(got, " "), want)
	}
	if d := (Restart{Backoff: 10 * time.Minute}).backoff(3); d != 10*time.Minute {
		t.Errorf("a backoff above the cap grows or shrinks: %s", d)
	}
	if d := (Restart{}).backoff(4); d != 0 {
		t.Errorf("backoff 0 grows: %s", d)
	}
}

func TestAttemptFilter(t *testing.T) {
	const mark = "MARK"
	in := "a\nb@@tfhive-attempt MARK 0 3\nc@@tfhive-attempt OTHER 1 2\n@@tfhive-attempt MARK x y\nd@@tfhive-attempt MARK 1 0\n@@tf"
	for _, size := range []int{1, 2, 5, 1000} {
		var out bytes.Buffer
		var seen []string
		f := newAttemptFilter(&out, mark, func(a, rc int) { seen = append(seen, fmt.Sprintf("%d:%d", a, rc)) })
		for i := 0; i < len(in); i += size {
			f.Write([]byte(in[i:min(i+size, len(in))]))
		}
		f.flush()
		if want := "a\nbc@@tfhive-attempt OTHER 1 2\n@@tfhive-attempt MARK x y\nd@@tf"; out.String() != want {
			t.Errorf("writes of %d: out %q, want %q", size, out.String(), want)
		}
		if strings.Join(seen, " ") != "0:3 1:0" {
			t.Errorf("writes of %d: attempts %v", size, seen)
		}
	}
}

func attemptDone(i, code int) event {
	return event{kind: evAttemptEnd, task: i, code: code, after: time.Second}
}
func backoffOverEv(i int) event { return event{kind: evBackoffOver, task: i} }

// TestRestartPolicy: which failures restart, who restarts with them, the
// backoffs, and the run's end.
func TestRestartPolicy(t *testing.T) {
	ps := func(p *schedule.Plan) *schedule.Plan {
		for _, t := range p.Tasks {
			if t.Role == schedule.RolePS {
				p.Cluster.PS = append(p.Cluster.PS, t.Address)
			}
		}
		return p
	}
	psWorkers := func() *schedule.Plan { return ps(tfPlan("ps:0@h1", "worker:0@h1", "worker:1@h2")) }
	mwms := func() *schedule.Plan { return tfPlan("worker:0@h1", "worker:1@h2") }
	torch := func() *schedule.Plan {
		return testPlan(schedule.FrameworkTorch, "worker:0@h1", "worker:1@h1", "worker:2@h2")
	}
	codes, _ := ParseRestartOn("1-127")
	for _, c := range []struct {
		name     string
		plan     *schedule.Plan
		restart  Restart
		steps    []step
		result   string
		code     int
		attempts map[string]string // task id → its attempts, "0:exited 3:restarted alone,1:exited 0"
	}{
		{
			name: "tf with ps: a worker restarts alone, the ps never",
			plan: psWorkers(), restart: Restart{Max: 2, Backoff: time.Second},
			steps: []step{
				{attemptDone(2, 3), "tfhive: worker:1 on h2 exited 3; restarting it in 1s (attempt 2 of 3) | backoff worker:1 1s"},
				{backoffOverEv(2), "r worker:1"},
				{attemptDone(1, 0), "e worker:0"},
				{exited(1, 0), ""},
				{attemptDone(2, 0), "e worker:1"},
				{exited(2, 0), "t ps:0 | kill-timer"},
				{attemptDone(0, 143), "e ps:0"},
				{exited(0, 143), ""},
			},
			result: record.ResultSucceeded, code: 0,
			attempts: map[string]string{"ps:0": "0:stopped 143", "worker:0": "0:exited 0", "worker:1": "0:exited 3:restarted alone,1:exited 0"},
		},
		{
			name: "tf with ps: the ps fails, every task restarts",
			plan: psWorkers(), restart: Restart{Max: 1, Backoff: time.Second},
			steps: []step{
				{attemptDone(0, 1), "tfhive: ps:0 on h1 exited 1; restarting every task in 1s (attempt 2 of 2) | t worker:0,worker:1 | regroup-kill-timer"},
				{attemptDone(1, 143), ""},
				{event{kind: evRegroupKill}, "k worker:1"},
				{attemptDone(2, 137), "backoff all 1s"},
				{backoffOverEv(-1), "r ps:0,worker:0,worker:1"},
				{attemptDone(1, 0), "e worker:0"},
				{exited(1, 0), ""},
				{attemptDone(2, 0), "e worker:1"},
				{exited(2, 0), "t ps:0 | kill-timer"},
				{attemptDone(0, 143), "e ps:0"},
				{exited(0, 143), ""},
			},
			result: record.ResultSucceeded, code: 0,
			attempts: map[string]string{
				"ps:0":     "0:exited 1:restarted every task,1:stopped 143",
				"worker:0": "0:stopped 143:restarted with every task: ps:0 on h1 exited 1,1:exited 0",
				"worker:1": "0:stopped 137:restarted with every task: ps:0 on h1 exited 1,1:exited 0",
			},
		},
		{
			name: "without ps (collective): a worker restarts every task",
			plan: mwms(), restart: Restart{Max: 1, Backoff: time.Second},
			steps: []step{
				{attemptDone(0, 3), "tfhive: worker:0 on h1 exited 3; restarting every task in 1s (attempt 2 of 2) | t worker:1 | regroup-kill-timer"},
				{attemptDone(1, 1), "backoff all 1s"},
				{backoffOverEv(-1), "r worker:0,worker:1"},
			},
			attempts: map[string]string{"worker:1": "0:exited 1:restarted with every task: worker:0 on h1 exited 3"},
		},
		{
			name: "torch: every rank restarts; out of restarts, the code is the task's",
			plan: torch(), restart: Restart{Max: 1, Backoff: 2 * time.Second},
			steps: []step{
				{attemptDone(2, 3), "tfhive: worker:2 on h2 exited 3; restarting every task in 2s (attempt 2 of 2) | t worker:0,worker:1 | regroup-kill-timer"},
				{attemptDone(0, 143), ""},
				{attemptDone(1, 143), "backoff all 2s"},
				{backoffOverEv(-1), "r worker:0,worker:1,worker:2"},
				{attemptDone(2, 3), "e worker:2"},
				{exited(2, 3), "tfhive: worker:2 on h2 exited 3; stopping the other tasks | t worker:0,worker:1 | kill-timer"},
				{attemptDone(0, 143), "e worker:0"},
				{attemptDone(1, 143), "e worker:1"},
				{exited(0, 143), ""},
				{exited(1, 143), ""},
			},
			result: record.ResultFailed, code: 3,
			attempts: map[string]string{"worker:2": "0:exited 3:restarted every task,1:exited 3", "worker:0": "0:stopped 143:restarted with every task: worker:2 on h2 exited 3,1:stopped 143"},
		},
		{
			name: "--restart-on: a code outside does not restart",
			plan: psWorkers(), restart: Restart{Max: 3, On: codes, Backoff: time.Second},
			steps: []step{
				{attemptDone(1, 137), "e worker:0"},
				{exited(1, 137), "tfhive: worker:0 on h1 was killed by signal 9 (exit 137); stopping the other tasks | t ps:0,worker:1 | kill-timer"},
			},
			attempts: map[string]string{"worker:0": "0:exited 137"},
		},
		{
			name: "backoff grows per task",
			plan: psWorkers(), restart: Restart{Max: 3, Backoff: time.Second},
			steps: []step{
				{attemptDone(1, 3), "tfhive: worker:0 on h1 exited 3; restarting it in 1s (attempt 2 of 4) | backoff worker:0 1s"},
				{backoffOverEv(1), "r worker:0"},
				{attemptDone(1, 3), "tfhive: worker:0 on h1 exited 3; restarting it in 2s (attempt 3 of 4) | backoff worker:0 2s"},
				{backoffOverEv(1), "r worker:0"},
				{attemptDone(1, 3), "tfhive: worker:0 on h1 exited 3; restarting it in 4s (attempt 4 of 4) | backoff worker:0 4s"},
				{backoffOverEv(1), "r worker:0"},
				{attemptDone(1, 3), "e worker:0"},
			},
		},
		{
			name: "decided during a backoff: the waiting task is told to end, the backoff does nothing",
			plan: psWorkers(), restart: Restart{Max: 2, Backoff: time.Second},
			steps: []step{
				{attemptDone(2, 3), "tfhive: worker:1 on h2 exited 3; restarting it in 1s (attempt 2 of 3) | backoff worker:1 1s"},
				{interruptINT, "t ps:0,worker:0 | kill-timer | e worker:1"},
				{backoffOverEv(2), ""},
				{exited(2, 3), ""},
				{graceOver, "k ps:0,worker:0 | give-up-timer"},
			},
			attempts: map[string]string{"worker:1": "0:exited 3:restarted alone"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPolicy(c.plan)
			p.restart = c.restart
			for _, s := range launched(c.plan) {
				if got := render(p, p.apply(s.ev)); got != s.want {
					t.Fatalf("claim phase: %q, want %q", got, s.want)
				}
			}
			for i, s := range c.steps {
				if got := render(p, p.apply(s.ev)); got != s.want {
					t.Fatalf("step %d:\n got %q\nwant %q", i, got, s.want)
				}
			}
			if c.result != "" {
				if result, code, _, _ := p.final(); result != c.result || code != c.code {
					t.Errorf("final %s %d, want %s %d", result, code, c.result, c.code)
				}
			}
			for id, want := range c.attempts {
				for i, task := range c.plan.Tasks {
					if task.ID != id {
						continue
					}
					var l []string
					for _, a := range p.state[i].attempts {
						w := fmt.Sprintf("%d:%s %d", a.Attempt, a.Outcome, *a.ExitCode)
						if a.Restart != "" {
							w += ":" + a.Restart
						}
						l = append(l, w)
					}
					if got := strings.Join(l, ","); got != want {
						t.Errorf("%s attempts:\n got %s\nwant %s", id, got, want)
					}
				}
			}
		})
	}
}

// attempting plays a supervisor with restarts: attempt n writes
// "out n" and ends with codes[n] (the last code for later ones), then
// waits for "r" or "e" as supervisor-run.sh does; "t"/"k" during an
// attempt end it 143/137.
func attempting(codes ...int) fakeScript {
	return runs(func(p *fakeProc) {
		m := regexp.MustCompile(`tfhive_mark='?([A-Za-z0-9]+)`).FindStringSubmatch(p.runStage)
		if m == nil || !strings.Contains(p.runStage, "tfhive_restarts=1") {
			p.out("no mark or no restarts in the task stage\n")
			p.exit(99)
			return
		}
		first := 0
		if a := regexp.MustCompile(`tfhive_attempt0='?([0-9]+)`).FindStringSubmatch(p.runStage); a != nil {
			first, _ = strconv.Atoi(a[1])
		}
		for n := first; ; n++ {
			rc := codes[min(n-first, len(codes)-1)]
			p.out(fmt.Sprintf("out %d", n))
			p.out(fmt.Sprintf("%s%s %d %d\n", attemptMarker, m[1], n, rc))
			for {
				switch l := p.next(); l {
				case fmt.Sprintf("r %d", n+1):
				case "e", "":
					p.exit(rc)
					return
				default:
					continue
				}
				break
			}
		}
	})
}

func TestRunRestartsInProcess(t *testing.T) {
	plan := tfPlan("ps:0@h1", "worker:0@h1", "worker:1@h2")
	plan.Cluster.PS = []string{plan.Tasks[0].Address}
	f := newFakeRun(t, plan)
	f.o.Restart = Restart{Max: 2, Backoff: time.Millisecond}
	f.host("h1").script("worker:0", attempting(0))
	f.host("h2").script("worker:1", attempting(5, 5, 0))
	f.host("h1").script("ps:0", runs(untilStopped))
	sum, console := f.mustRun(context.Background())
	wantSummary(t, sum, record.ResultSucceeded, 0, "every worker exited 0", "ps:0 stopped 143", "worker:0 exited 0", "worker:1 exited 0")
	wantLines(t, "console", console,
		"tfhive: worker:1 on h2 exited 5; restarting it in 1ms (attempt 2 of 3)",
		"tfhive: worker:1 on h2 exited 5; restarting it in 2ms (attempt 3 of 3)")
	var w1 record.TaskResult
	for _, tr := range sum.Tasks {
		if tr.ID == "worker:1" {
			w1 = tr
		}
	}
	var got []string
	for _, a := range w1.Attempts {
		got = append(got, fmt.Sprintf("%d %s %d %s", a.Attempt, a.Outcome, *a.ExitCode, a.Restart))
	}
	if want := "0 exited 5 restarted alone|1 exited 5 restarted alone|2 exited 0 "; strings.Join(got, "|") != want {
		t.Errorf("worker:1 attempts %q, want %q", strings.Join(got, "|"), want)
	}
	if log, _ := os.ReadFile(w1.Log); string(log) != "out 0out 1out 2" {
		t.Errorf("worker:1 log %q", log)
	}
	if lines := strings.Join(f.proc("worker:1").sawLines(), ","); !strings.Contains(lines, "r 1,") || !strings.Contains(lines, "r 2,") {
		t.Errorf("worker:1 got %q, want r 1 and r 2", lines)
	}
	var table bytes.Buffer
	WriteSummary(&table, sum)
	wantLines(t, "summary", table.String(), "restart: worker:1 on h2: attempt 0 exited 5 after ", "restart: worker:1 on h2: attempt 1 exited 5 after ", "; restarted alone\n")
	if !strings.Contains(table.String(), "ATTEMPTS") {
		t.Errorf("no ATTEMPTS column:\n%s", table.String())
	}
}

// Placed, the filter takes out only the attempt lines at the offsets the
// records gave: one the task printed, mark and all, is output.
func TestAttemptFilterPlaced(t *testing.T) {
	var out bytes.Buffer
	var got []string
	f := newAttemptFilter(&out, "MK", func(a, rc int) { got = append(got, fmt.Sprint(a, rc)) })
	f.placed = true
	forged := "x@@tfhive-attempt MK 0 0\n"
	real := "@@tfhive-attempt MK 0 3\n"
	recs := &attemptRecords{next: io.Discard, prefix: "@@tfhive-attempt MK ", f: f}
	recs.Write([]byte("@@tfhive-attempt MK 0 3 " + fmt.Sprint(len(forged)+4) + "\n"))
	for _, c := range []byte(forged + "tail" + real + "next") {
		f.Write([]byte{c})
	}
	f.flush()
	if want := forged + "tailnext"; out.String() != want || fmt.Sprint(got) != "[0 3]" {
		t.Errorf("out %q, reports %v; want %q, [0 3]", out.String(), got, want)
	}
}

// Checked, the records come among the file's bytes, anywhere (mid-line,
// cut between writes): the line a record names is taken out whether its
// record comes before or after it; one no record names, the task's, is
// passed on once a "seen" past it, or the stream's end, says none will
// come; and the task's own record lines, without the secret, are its
// output.
func TestAttemptFilterChecked(t *testing.T) {
	forged := "x@@tfhive-attempt MK 0 0\n"
	real := "@@tfhive-attempt MK 0 3\n"
	fake := "@@tfhive-rec MK at 1\n"
	off := fmt.Sprint(len(forged) + len(fake) + 4)
	for _, c := range []struct{ name, stream string }{
		{"record first", "@@tfhive-rec SEC at " + off + "\n" + forged + fake + "ta@@tfhive-rec SEC seen 3\nil" + real + "next"},
		{"record after", forged + fake + "tail" + real + "ne@@tfhive-rec SEC at " + off + "\n@@tfhive-rec SEC seen 99\nxt"},
		{"no seen", forged + fake + "tail" + real + "next@@tfhive-rec SEC at " + off + "\n"},
	} {
		for _, step := range []int{1, 3, 1000} {
			var out bytes.Buffer
			var got []string
			f := newAttemptFilter(&out, "MK", func(a, rc int) { got = append(got, fmt.Sprint(a, rc)) })
			f.checked("SEC")
			rl := &recordLines{next: f, f: f}
			for b := []byte(c.stream); len(b) > 0; {
				n := min(step, len(b))
				rl.Write(b[:n])
				b = b[n:]
			}
			rl.flush()
			f.flush()
			if want := forged + fake + "tailnext"; out.String() != want || fmt.Sprint(got) != "[0 3]" {
				t.Errorf("%s, writes of %d: out %q, reports %v; want %q, [0 3]", c.name, step, out.String(), got, want)
			}
		}
	}
	// A forged line is held only until a "seen" past it.
	var out bytes.Buffer
	f := newAttemptFilter(&out, "MK", func(int, int) { t.Error("a forged line was taken") })
	f.checked("SEC")
	rl := &recordLines{next: f, f: f}
	rl.Write([]byte(forged + "more"))
	if out.String() != "x" {
		t.Errorf("before seen: %q", out.String())
	}
	rl.Write([]byte("@@tfhive-rec SEC seen 2\n"))
	if out.String() != forged+"more" {
		t.Errorf("after seen: %q", out.String())
	}
}
