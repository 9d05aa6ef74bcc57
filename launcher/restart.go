package launcher

import (
	"io"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
)

// Restarts (tfhive run --restarts): a task's supervisor runs it again,
// under the same claims, when tfhive says so (scripts/supervisor-run.sh).
// Which failures restart, how long to wait first and who restarts with
// the failed task are decided by the lifecycle (lifecycle/restart.go);
// the supervisor only reports each attempt's end and waits for "r" or
// "e", and the runner carries the decisions out here.

// attemptFilter is task i's stdout filter: attempt lines go to the run's
// loop.
func (r *runner) attemptFilter(i int, next io.Writer) *supervisor.AttemptFilter {
	return supervisor.NewAttemptFilter(next, r.mark, func(attempt, rc int) {
		select {
		case r.attemptEnds <- attemptEnd{i, attempt, rc}:
		case <-r.quit:
		}
	})
}

// after feeds ev back to the run's loop after d.
func (r *runner) after(d time.Duration, ev lifecycle.Event) {
	time.AfterFunc(d, func() {
		select {
		case r.later <- ev:
		case <-r.quit:
		}
	})
}

// attemptsOf is task i's attempts for the summary: those that ended with
// a line of their own, then the last one, however it ended.
func (r *runner) attemptsOf(i int) []record.Attempt {
	s := r.p.State(i)
	l := append(r.o.Relaunch.Earlier(r.tasks[i].t.ID, r.tasks[i].t.Host), s.Attempts...)
	if n := len(l); n == 0 || l[n-1].Attempt != s.Attempt {
		if s.Phase == lifecycle.PhaseDone && s.Outcome == record.OutcomeNoStart {
			return l
		}
		rt := r.tasks[i]
		l = append(l, record.Attempt{Attempt: s.Attempt, Outcome: s.Outcome, ExitCode: s.Code, Duration: rt.res.Duration - rt.attemptStart.Sub(rt.started)})
	}
	return l
}
