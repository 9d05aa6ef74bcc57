package commands

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// relaunch starts a run that failed because a host was lost again, whole,
// on a new plan of the same request without that host, as long as the
// restart policy allows (lifecycle.Relaunchable) and the rest fits: the
// probe, plan and start are start's (the same as the run's first), with
// lo.Relaunch carrying the attempts over. Claims are taken anew: the
// old plan's were let go with its tasks. It returns the run's final
// summary; when the rest does not fit, the failed run's, after a line
// saying so.
func relaunch(ctx context.Context, sum *record.Summary, rs lifecycle.Restart, lo *launcher.RunOptions, fleet *probe.Fleet,
	retry launcher.Retry, start func(context.Context) (*record.Summary, error)) *record.Summary {
	// Only a claim taken meanwhile is tried again: --wait was for the
	// run's start, not for a host that went away.
	retry.Wait = 0
	for {
		lost, wait, next, ok := lifecycle.Relaunchable(sum, rs)
		if !ok {
			return sum
		}
		without := strings.Join(lost, ", ")
		lo.Console.Printf("tfhive: lost %s; re-planning without it and restarting every task in %s (attempt %d of %d)", without, wait, next+1, rs.Max+1)
		if err := launcher.Pause(ctx, wait); err != nil {
			lo.Console.Printf("tfhive: re-plan without %s: interrupted", without)
			return sum
		}
		for _, h := range lost {
			fleet.Leave(h, "lost during the run")
		}
		// The run goes on: tfhive runs and attach must not take the
		// failed start's summary for its end.
		summaryFile := filepath.Join(lo.LogDir, rundir.Summary)
		os.Remove(summaryFile)
		lo.Relaunch = lo.Relaunch.Carry(sum, lost)
		again, err := retry.Do(ctx, start)
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
		lo.Console.Printf("tfhive: re-plan without %s %s: %s", without, how, why)
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
