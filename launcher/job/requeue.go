package job

import (
	"context"
	"os"
	"path/filepath"

	"github.com/tfhive/tfhive/launcher/csvlog"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/wording"
)

// requeue puts a run that ended as sum back in the queue when
// lifecycle.Requeueable says so: at its old place (its tickets, parked
// while it ran, are held by the holders that the hosts dated when it
// first waited: parkTickets), waiting for GPUs as long as --wait allows again,
// or without end when the run did not wait at first (Slurm's requeued
// job pends until it runs). It starts again as a relaunch does, every
// task's attempts carried over and its tasks told to resume. again is
// false when the run is not requeued (sum, nil are then what Run
// returns) or its new start did not come (the old summary stays, and
// err says why).
func (r *run) requeue(ctx context.Context, sum *record.Summary) (*record.Summary, bool, error) {
	done := 0
	if r.lo.Relaunch != nil {
		done = r.lo.Relaunch.Requeues
	}
	why, ok := lifecycle.Requeueable(sum, r.spec.Requeue, done)
	if !ok {
		return sum, false, nil
	}
	console := r.lo.Console
	console.Printf("tfhive: %s: requeued at its place in the queue (requeue %d of %d); its tasks will see TFHIVE_RESUME=1", wording.FirstLine(sum.Reason), done+1, lifecycle.MaxRequeues)
	events := filepath.Join(r.lo.LogDir, rundir.Events)
	tl := csvlog.NewEvents(events, true)
	// The one stream of the run's events: notifications hear it too.
	tl.Subscribe(r.lo.OnEvent)
	tl.Add("", "", record.EventRequeued, why)
	tl.Close()
	// The run goes on: runs and attach must not take this summary for
	// its end.
	summaryFile := filepath.Join(r.lo.LogDir, rundir.Summary)
	os.Remove(summaryFile)
	r.lo.Relaunch = r.lo.Relaunch.CarryRequeue(sum, why)
	// A fresh wait, the runs seen ending forgotten: its parked tickets,
	// whose holders date its first place, wait again once it does not
	// fit (queue.go).
	r.held, r.ending, r.unlabelled, r.settling = nil, nil, nil, nil
	if r.spec.Wait == 0 {
		r.spec.WaitForever = true
	}
	again, err := r.retry().Do(ctx, r.attempt)
	r.waited()
	if again != nil {
		return again, err == nil, err
	}
	why = "interrupted"
	if err != nil && ctx.Err() == nil {
		why = wording.FirstLine(err.Error())
	}
	console.Printf("tfhive: requeued run did not start again: %s", why)
	if f, err := rundir.OpenFile(summaryFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC); err == nil {
		record.WriteSummaryJSON(f, sum)
		f.Close()
	}
	return sum, false, nil
}
