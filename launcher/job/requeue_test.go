package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/hosttest"
)

// preemptedRun is a start whose only task was preempted at attempt n.
func preemptedRun(lo launcher.Options, n int) *record.Summary {
	code := 143
	return &record.Summary{RunID: lo.Plan.RunID, Result: record.ResultPreempted, ExitCode: record.ExitPreempted,
		Reason: "task worker:0 on a was preempted by run hi of bob (--priority high)",
		Tasks: []record.TaskResult{{ID: "worker:0", Host: "a", Outcome: record.ResultPreempted, ExitCode: &code,
			Attempts: []record.Attempt{{Attempt: n, Outcome: record.ResultPreempted, ExitCode: &code}}}}}
}

// exitedRun is a start whose only task exited code at attempt n.
func exitedRun(lo launcher.Options, n, code int) *record.Summary {
	return &record.Summary{RunID: lo.Plan.RunID, Result: record.ResultFailed, ExitCode: code,
		Tasks: []record.TaskResult{{ID: "worker:0", Host: "a", Outcome: record.OutcomeExited, ExitCode: &code,
			Attempts: []record.Attempt{{Attempt: n, Outcome: record.OutcomeExited, ExitCode: &code}}}}}
}

// A preempted run, and one whose task asks by its code, go back to the
// queue at their old place and start again with the attempts carried;
// one that does neither, or has no requeue left, ends as it ended.
func TestRequeue(t *testing.T) {
	for _, c := range []struct {
		name   string
		rq     lifecycle.Requeue
		first  func(launcher.Options) (*record.Summary, error)
		starts int
		want   string
	}{
		{"preempted", lifecycle.Requeue{Preempted: true}, func(lo launcher.Options) (*record.Summary, error) { return preemptedRun(lo, 0), nil }, 2, record.ResultSucceeded},
		{"asked by code", lifecycle.Requeue{On: []int{85}}, func(lo launcher.Options) (*record.Summary, error) { return exitedRun(lo, 0, 85), nil }, 2, record.ResultSucceeded},
		{"another code", lifecycle.Requeue{On: []int{85}}, func(lo launcher.Options) (*record.Summary, error) { return exitedRun(lo, 0, 1), nil }, 1, record.ResultFailed},
		{"preempted, not asked to", lifecycle.Requeue{On: []int{85}}, func(lo launcher.Options) (*record.Summary, error) { return preemptedRun(lo, 0), nil }, 1, record.ResultPreempted},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1})
			j := newTestJob(t, f, "r", 1)
			j.spec.Requeue = c.rq
			s := &starts{answers: []func(launcher.Options) (*record.Summary, error){c.first, succeeded}}
			sum, err := Run(context.Background(), j.spec, Hooks{Start: s.start})
			j.spec.Engine.Console.Close()
			if err != nil || sum.Result != c.want || s.n() != c.starts {
				t.Fatalf("%v, %+v after %d starts; want %s after %d", err, sum, s.n(), c.want, c.starts)
			}
			if c.starts == 1 {
				return
			}
			again := s.calls[1]
			rl := again.Relaunch
			if rl == nil || rl.Requeues != 1 || rl.FirstAttempt("worker:0") != 1 || !strings.HasPrefix(rl.Attempts["worker:0"][0].Restart, "requeued: ") {
				t.Errorf("the requeued start's carry: %+v", rl)
			}
			if again.Plan.RunID != "r" {
				t.Errorf("requeued as run %q, want the same run", again.Plan.RunID)
			}
			if !strings.Contains(j.console.String(), "requeued at its place in the queue (requeue 1 of 5)") {
				t.Errorf("console: %q", j.console.String())
			}
			ev, _ := os.ReadFile(filepath.Join(j.spec.Engine.LogDir, rundir.Events))
			if !strings.Contains(string(ev), ","+record.EventRequeued+",") {
				t.Errorf("events.csv has no requeued row: %q", ev)
			}
		})
	}
}

// At its old place: the request the requeued run queues with keeps the
// QueueSince of its first wait, and a run preempted more than
// MaxRequeues times ends preempted.
func TestRequeueKeepsPlaceAndEnds(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1})
	j := newTestJob(t, f, "r", 1)
	j.spec.Requeue = lifecycle.Requeue{Preempted: true}
	n := 0
	s := &starts{answers: []func(launcher.Options) (*record.Summary, error){func(lo launcher.Options) (*record.Summary, error) {
		n++
		return preemptedRun(lo, n-1), nil
	}}}
	r := newRun(j.spec, Hooks{Start: s.start})
	since := r.req.QueueSince
	sum, err := r.retry().Do(context.Background(), r.attempt)
	for err == nil {
		var again bool
		if sum, again, err = r.requeue(context.Background(), sum); !again {
			break
		}
		if !r.req.QueueSince.Equal(since) {
			t.Fatalf("requeued with QueueSince %v, want the first wait's %v", r.req.QueueSince, since)
		}
	}
	r.close()
	j.spec.Engine.Console.Close()
	if err != nil || sum.Result != record.ResultPreempted || s.n() != lifecycle.MaxRequeues+1 {
		t.Fatalf("%v, %s after %d starts; want preempted after %d", err, sum.Result, s.n(), lifecycle.MaxRequeues+1)
	}
	if got := len(sum.Tasks[0].Attempts); got != 1 || sum.Tasks[0].Attempts[0].Attempt != lifecycle.MaxRequeues {
		t.Errorf("the last start's attempts: %+v", sum.Tasks[0].Attempts)
	}
}
