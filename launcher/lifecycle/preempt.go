package lifecycle

import "github.com/tfhive/tfhive/launcher/record"

// Preempted is how a run ends once a high-priority run preempted its task
// id on host: preempted, exit ExitPreempted, whatever its tasks' codes (a
// task stopped by SIGTERM exits 143, which would read as an interrupt).
// run and user name the preempting run; "-" when a later session could
// not know.
func Preempted(id, host, run, user string) (result string, code int, reason string) {
	reason = "task " + id + " on " + host + " was preempted by a --priority high run"
	if run != "-" {
		reason = "task " + id + " on " + host + " was preempted by run " + run + " of " + user + " (--priority high)"
	}
	return record.ResultPreempted, record.ExitPreempted, reason
}
