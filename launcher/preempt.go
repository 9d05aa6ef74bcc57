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
