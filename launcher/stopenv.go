package launcher

import (
	"strconv"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
)

// resumeEnv adds what a task of a requeued run learns (lifecycle.Requeue):
// TFHIVE_RESUME=1, to load its checkpoint, and TFHIVE_ATTEMPT, its
// attempt's number (with --restarts the supervisor says it too, the
// same). TFHIVE_STOP_GRACE, the seconds from the stop signal to SIGKILL,
// every task sees (the supervisor adds TFHIVE_STOP_DEADLINE, the file
// that says when, once a stop begins: supervisor-run.sh).
func (r *runner) resumeEnv(env map[string]string, t schedule.Task) {
	env["TFHIVE_STOP_GRACE"] = strconv.Itoa(int(r.o.Grace.Seconds()))
	if rl := r.o.Relaunch; rl != nil {
		env["TFHIVE_ATTEMPT"] = strconv.Itoa(rl.FirstAttempt(t.ID))
		if rl.Requeues > 0 {
			env["TFHIVE_RESUME"] = "1"
		}
	}
}

// noteResumed writes a requeued run's new start to its timeline.
func (r *runner) noteResumed() {
	if rl := r.o.Relaunch; rl != nil && rl.Requeues > 0 {
		r.timeline.Add("", "", record.EventResumed, "requeue "+strconv.Itoa(rl.Requeues))
	}
}
