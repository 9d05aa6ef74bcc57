package lifecycle

import "github.com/tfhive/tfhive/launcher/record"

// Cancelled is how a run ends once `tfhive kill` stopped its task id on
// host (that task's session said its supervisor got SIGTERM): cancelled,
// exit ExitCancelled, whatever the task's code (143 when it died of the
// SIGTERM, its own when it handled it), since a cancel is no failure of
// the job's.
func Cancelled(id, host string) (result string, code int, reason string) {
	return record.ResultCancelled, record.ExitCancelled, "task " + id + " on " + host + " was cancelled (tfhive kill)"
}

// CancelledReason is the reason of a sweep's trial that its sweep's
// tfhive stopped because `tfhive kill SWEEP` asked it to (SigCancelled):
// cancelled, exit ExitCancelled, as a run that kill stops itself.
const CancelledReason = "cancelled (tfhive kill of its sweep)"
