package lifecycle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
	"github.com/tfhive/tfhive/schedule/scheduletest"
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

func attemptDone(i, code int) Event {
	return Event{Kind: EvAttemptEnd, Task: i, Code: code, After: time.Second}
}

func backoffOverEv(i int) Event { return Event{Kind: EvBackoffOver, Task: i} }

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
	psWorkers := func() *schedule.Plan { return ps(scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2")) }
	mwms := func() *schedule.Plan { return scheduletest.TF("worker:0@h1", "worker:1@h2") }
	torch := func() *schedule.Plan {
		return scheduletest.Plan(schedule.FrameworkTorch, "worker:0@h1", "worker:1@h1", "worker:2@h2")
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
				{Event{Kind: EvRegroupKill}, "k worker:1"},
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
			name: "torch: every rank restarts; out of restarts, the code is the task's (its 3 is tfhive's own: 1)",
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
			result: record.ResultFailed, code: 1, // 3 is tfhive's own (no GPUs): exit 1
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
			p := New(c.plan, c.restart)
			for _, s := range launched(c.plan) {
				if got := render(p, p.Apply(s.ev)); got != s.want {
					t.Fatalf("claim phase: %q, want %q", got, s.want)
				}
			}
			for i, s := range c.steps {
				if got := render(p, p.Apply(s.ev)); got != s.want {
					t.Fatalf("step %d:\n got %q\nwant %q", i, got, s.want)
				}
			}
			if c.result != "" {
				if result, code, _, _ := p.Final(); result != c.result || code != c.code {
					t.Errorf("final %s %d, want %s %d", result, code, c.result, c.code)
				}
			}
			for id, want := range c.attempts {
				for i, task := range c.plan.Tasks {
					if task.ID != id {
						continue
					}
					var l []string
					for _, a := range p.state[i].Attempts {
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
