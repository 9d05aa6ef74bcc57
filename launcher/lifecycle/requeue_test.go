package lifecycle

import (
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
)

func TestRequeueable(t *testing.T) {
	code := func(n int) *int { return &n }
	preempted := &record.Summary{Result: record.ResultPreempted, Tasks: []record.TaskResult{{ID: "worker:1", Outcome: record.OutcomeExited, ExitCode: code(143)}}}
	asked := &record.Summary{Result: record.ResultFailed, Tasks: []record.TaskResult{{ID: "worker:1", Outcome: record.OutcomeExited, ExitCode: code(85)}}}
	lost := &record.Summary{Result: record.ResultFailed, Tasks: []record.TaskResult{{ID: "worker:1", Outcome: record.OutcomeLost, ExitCode: code(85)}}}
	for _, c := range []struct {
		s    *record.Summary
		rq   Requeue
		done int
		want string
	}{
		{preempted, Requeue{Preempted: true}, 0, "preempted"},
		{preempted, Requeue{Preempted: true}, MaxRequeues, ""},
		{preempted, Requeue{On: []int{85}}, 0, ""},
		{asked, Requeue{On: []int{86, 85}}, 0, "task worker:1 exited 85 (--requeue-on)"},
		{asked, Requeue{Preempted: true}, 0, ""},
		{lost, Requeue{On: []int{85}}, 0, ""},
		{nil, Requeue{Preempted: true}, 0, ""},
	} {
		why, ok := Requeueable(c.s, c.rq, c.done)
		if why != c.want || ok != (c.want != "") {
			t.Errorf("Requeueable(%+v, %+v, %d) = %q, %v; want %q", c.s, c.rq, c.done, why, ok, c.want)
		}
	}
}

// A --requeue-on code is never restarted in place, whatever --restart-on.
func TestRequeueCodeNotRestarted(t *testing.T) {
	rs := Restart{Max: 3, Requeue: []int{85}}
	if rs.restarts(85, false) || !rs.restarts(1, false) || !rs.restarts(85, true) {
		t.Errorf("restarts: 85 %v, 1 %v, lost %v", rs.restarts(85, false), rs.restarts(1, false), rs.restarts(85, true))
	}
}

func TestParseRequeueOn(t *testing.T) {
	if got, err := ParseRequeueOn("85, 86"); err != nil || len(got) != 2 || got[0] != 85 || got[1] != 86 {
		t.Errorf("85, 86: %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "126", "143", "x", "85,"} {
		if _, err := ParseRequeueOn(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
