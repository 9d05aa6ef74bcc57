package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// relaunch starts a run that failed because a host was lost again, whole,
// on a new plan of the same request without that host, as long as the
// restart policy allows (lifecycle.Relaunchable) and the rest fits: the
// probe, plan and start are the attempt's (the same as the run's first),
// with the engine's Relaunch carrying the attempts over. Claims are taken
// anew: the old plan's were let go with its tasks. It returns the run's
// final summary; when the rest does not fit, the failed run's, after a
// line saying so.
func (r *run) relaunch(ctx context.Context, sum *record.Summary, retry Retry) *record.Summary {
	// Only a claim taken meanwhile is tried again: --wait was for the
	// run's start, not for a host that went away.
	retry.Wait, retry.Forever = 0, false
	rs, console := r.lo.Restart, r.lo.Console
	for {
		lost, wait, next, ok := lifecycle.Relaunchable(sum, rs)
		if !ok {
			return sum
		}
		without := strings.Join(lost, ", ")
		console.Printf("tfhive: lost %s; re-planning without it and restarting every task in %s (attempt %d of %d)", without, wait, next+1, rs.Max+1)
		if err := pause(ctx, wait); err != nil {
			console.Printf("tfhive: re-plan without %s: interrupted", without)
			return sum
		}
		for _, h := range lost {
			r.spec.Fleet.Leave(h, "lost during the run")
		}
		// The run goes on: tfhive runs and attach must not take the
		// failed start's summary for its end.
		summaryFile := filepath.Join(r.lo.LogDir, rundir.Summary)
		os.Remove(summaryFile)
		r.lo.Relaunch = r.lo.Relaunch.Carry(sum, lost)
		again, err := retry.Do(ctx, r.attempt)
		if again != nil {
			// It ran: its summary is the run's, even if writing it failed.
			sum = again
			if err != nil {
				return sum
			}
			continue
		}
		how, why := "failed", "nothing started"
		if err != nil {
			how, why = notFit(err), wording.FirstLine(err.Error())
		}
		console.Printf("tfhive: re-plan without %s %s: %s", without, how, why)
		if f, err := rundir.OpenFile(summaryFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC); err == nil {
			record.WriteSummaryJSON(f, sum)
			f.Close()
		}
		return sum
	}
}

// notFit says how a re-plan failed: it "did not fit" (too few GPUs, or no
// host left), or it "failed" otherwise.
func notFit(err error) string {
	var capacity *schedule.CapacityError
	var unreachable *UnreachableError
	if errors.As(err, &capacity) || errors.As(err, &unreachable) {
		return "did not fit"
	}
	return "failed"
}

// retry is when the run plans and starts again (Retry), saying on
// Hooks.Waiting why it waits.
func (r *run) retry() Retry {
	return Retry{
		Wait: r.spec.Wait, Forever: r.spec.WaitForever, Wake: r.wake,
		Waiting: func(err error, delay, left time.Duration) {
			if r.queued() {
				// The line says it all: no "probing hosts" line a retry.
				r.spec.Fleet.NoProgress()
			}
			if r.hooks.Waiting == nil {
				return
			}
			w := Waiting{Err: err, Ahead: schedule.Ahead(r.lastInv, r.req), Queued: r.queued(), Left: left, Wait: r.spec.Wait}
			if r.lastInv.Seeded {
				// Its probe was older than the run's own and may not have
				// seen the queue as it is: no place in it to say.
				w.Ahead, w.Queued = nil, false
			}
			if r.spec.WaitForever {
				// Until the sweep ends: no time left to say.
				w.Left = 0
			}
			r.hooks.Waiting(w)
		},
	}
}
