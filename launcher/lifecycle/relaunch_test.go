package lifecycle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
)

func TestRelaunchable(t *testing.T) {
	lost := func(id, host string, attempts ...int) record.TaskResult {
		tr := record.TaskResult{ID: id, Host: host, Outcome: record.OutcomeLost}
		for _, a := range attempts {
			tr.Attempts = append(tr.Attempts, record.Attempt{Attempt: a, Outcome: record.OutcomeExited})
		}
		return tr
	}
	stopped := func(id, host string, attempt int) record.TaskResult {
		return record.TaskResult{ID: id, Host: host, Outcome: record.OutcomeStopped, Attempts: []record.Attempt{{Attempt: attempt, Outcome: record.OutcomeStopped}}}
	}
	failed := func(code int, tasks ...record.TaskResult) *record.Summary {
		return &record.Summary{Result: record.ResultFailed, ExitCode: code, Tasks: tasks}
	}
	onCodes, _ := ParseRestartOn("1-127")
	onLost, _ := ParseRestartOn("lost")
	any2 := Restart{Max: 2, Backoff: time.Second}
	for _, c := range []struct {
		name string
		s    *record.Summary
		rs   Restart
		want string // "hosts wait next", or "" for no relaunch
	}{
		{"lost worker", failed(4, lost("worker:0", "h2", 0), stopped("worker:1", "h1", 0)), any2, "h2 1s 1"},
		{"two hosts lost, second restart", failed(4, lost("worker:0", "h3", 0, 1), stopped("ps:0", "h1", 1), lost("worker:1", "h2", 1)), any2, "h2,h3 2s 2"},
		{"--restart-on lost", failed(4, lost("worker:0", "h2", 0)), Restart{Max: 1, On: onLost}, "h2 0s 1"},
		{"--restart-on codes only", failed(4, lost("worker:0", "h2", 0)), Restart{Max: 1, On: onCodes}, ""},
		{"no --restarts", failed(4, lost("worker:0", "h2")), Restart{}, ""},
		{"out of restarts", failed(4, lost("worker:0", "h2", 0, 1, 2)), any2, ""},
		{"another task out of restarts", failed(4, lost("worker:0", "h2", 0), stopped("worker:1", "h1", 2)), any2, ""},
		{"a task exited 4", failed(4, record.TaskResult{ID: "worker:0", Host: "h1", Outcome: record.OutcomeExited}), any2, ""},
		{"a lost task that did not decide", failed(1, lost("worker:0", "h2", 0)), any2, ""},
		{"succeeded", &record.Summary{Result: record.ResultSucceeded, Tasks: []record.TaskResult{lost("evaluator:0", "h2", 0)}}, any2, ""},
		{"interrupted", &record.Summary{Result: record.ResultInterrupted, ExitCode: 4, Tasks: []record.TaskResult{lost("worker:0", "h2", 0)}}, any2, ""},
		{"no summary", nil, any2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hosts, wait, next, ok := Relaunchable(c.s, c.rs)
			got := ""
			if ok {
				got = fmt.Sprintf("%s %s %d", strings.Join(hosts, ","), wait, next)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestRelaunchCarry(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &record.Summary{Started: start, Tasks: []record.TaskResult{
		{ID: "worker:0", Host: "h2", Outcome: record.OutcomeLost, Attempts: []record.Attempt{{Attempt: 0, Outcome: record.OutcomeLost}}},
		{ID: "ps:0", Host: "h1", Outcome: record.OutcomeStopped, Attempts: []record.Attempt{
			{Attempt: 0, Outcome: record.OutcomeExited, Restart: "restarted every task"}, {Attempt: 1, Outcome: record.OutcomeStopped}}},
	}}
	rl := (*Relaunch)(nil).Carry(s, []string{"h2"})
	if !rl.Started.Equal(start) {
		t.Errorf("started %s, want the run's first start %s", rl.Started, start)
	}
	if n := rl.FirstAttempt("worker:0"); n != 1 {
		t.Errorf("worker:0 goes on with attempt %d, want 1", n)
	}
	if n := rl.FirstAttempt("ps:0"); n != 2 {
		t.Errorf("ps:0 goes on with attempt %d, want 2", n)
	}
	// On its new host, the attempt on the lost one names it; ps:0 stays
	// where it was, so its attempts name no host.
	if got := fmt.Sprint(rl.Earlier("worker:0", "h1")); got != "[{0 lost <nil> 0s host lost: re-planned without h2 h2}]" {
		t.Errorf("worker:0 earlier %s", got)
	}
	if got := fmt.Sprint(rl.Earlier("ps:0", "h1")); got != "[{0 exited <nil> 0s restarted every task } {1 stopped <nil> 0s host lost: re-planned without h2 }]" {
		t.Errorf("ps:0 earlier %s", got)
	}
	// A second relaunch keeps the first start, and the attempts before.
	again := rl.Carry(&record.Summary{Started: start.Add(time.Hour), Tasks: []record.TaskResult{{ID: "worker:0", Host: "h1", Attempts: append(rl.Earlier("worker:0", "h1"), record.Attempt{Attempt: 1, Outcome: record.OutcomeLost})}}}, []string{"h1"})
	if !again.Started.Equal(start) || again.FirstAttempt("worker:0") != 2 || again.Attempts["worker:0"][1].Host != "h1" {
		t.Errorf("second relaunch: %s %+v", again.Started, again.Attempts)
	}
	if (*Relaunch)(nil).FirstAttempt("x") != 0 || (*Relaunch)(nil).Earlier("x", "h") != nil || rl.FirstAttempt("evaluator:0") != 0 {
		t.Error("a task with no attempts before starts at 0")
	}
}
