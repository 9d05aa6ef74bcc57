package launcher

import (
	"io"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
)

func (r *runner) preemptTap(next io.Writer, rec *supervisor.Preemption) *supervisor.PreemptTap {
	return supervisor.NewPreemptTap(next, r.mark, rec)
}

// preemptedSummary makes a run one of whose tasks was preempted end as
// preempted (preempted says how).
func (r *runner) preemptedSummary(s *record.Summary) {
	for _, rt := range r.tasks {
		run, user, ok := rt.preempted.Get()
		if !ok {
			continue
		}
		s.Result, s.ExitCode, s.Reason = lifecycle.Preempted(rt.t.ID, rt.t.Host, run, user)
		rt.res.Outcome = record.ResultPreempted
		return
	}
}

// cancelledSummary marks the tasks that `tfhive kill` stopped, ending on
// their own before tfhive stopped them, as cancelled, and makes the run
// cancelled when one of them decided it, or when no task's own failure
// did (a task that exits 0 on SIGTERM would make a success of a kill).
// A run decided otherwise (a task's own failure, a timeout, Ctrl-C)
// keeps its result: the kill came too late to be why it ended.
func (r *runner) cancelledSummary(s *record.Summary, decider int) {
	first := -1
	for i, rt := range r.tasks {
		if rt.preempted.Cancelled() && rt.res.Outcome == record.OutcomeExited {
			rt.res.Outcome = record.OutcomeCancelled
			if first < 0 {
				first = i
			}
		}
	}
	switch {
	case first < 0:
		return
	case decider >= 0 && r.tasks[decider].res.Outcome == record.OutcomeCancelled:
		first = decider
	case decider >= 0 || s.Result != record.ResultSucceeded && s.Result != record.ResultFailed:
		return
	}
	s.Result, s.ExitCode, s.Reason = lifecycle.Cancelled(r.tasks[first].t.ID, r.tasks[first].t.Host)
}
