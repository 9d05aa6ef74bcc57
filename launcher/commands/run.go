package commands

import (
	"context"
	"io"
	"os"
	"runtime/debug"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/notify"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// runInput is what Run checked of its options before any host is
// touched.
type runInput struct {
	keeper  bool
	out     io.Writer // the console's
	color   bool
	caps    *launcher.Captures
	restart lifecycle.Restart
	requeue lifecycle.Requeue
	stopSig string // --stop-signal's name without SIG
	// notify is --notify's targets (or the hosts file's); none for a
	// sweep's trial.
	notify []notify.Target
}

// Run plans the job, starts it, streams its output and prints the summary
// (job.Run: it plans and starts again when claims were lost to another
// run or, under --wait, there were not enough GPUs, and relaunches after
// a lost host). A run that did not succeed is a *RunFailedError.
func Run(ctx context.Context, o RunOptions) error {
	if o.Slurm.On != "" {
		return runOnSlurm(ctx, o)
	}
	_, err := run(ctx, o, runAs{})
	return err
}

// runAs is what the caller of run knows besides the options: the run
// that a rerun runs again, the --sync tree when it has listed and hashed
// it already (a rerun, for its comparison; a sweep, once for all its
// trials; nil: run prepares it), and for a sweep's trial its hooks: a
// trial is never a keeper, even in a detached sweep's, its log dir is
// made and checked by the sweep, and it waits its turn until the sweep
// ends.
type runAs struct {
	rerunOf string
	tree    *codesync.Tree
	trial   *trialHooks
	// launched is where the run was started and its git state, when the
	// caller learned it already: a sweep, once for all its trials (nil:
	// run learns it).
	launched *launchState
}

// run is Run, which also returns the summary (nil when nothing ran).
func run(ctx context.Context, o RunOptions, as runAs) (*record.Summary, error) {
	// A run is a long, mostly idle supervisor of many streams whose CPU
	// goes on starting them: collecting garbage more often keeps its heap
	// near what is live, for a few milliseconds of CPU. GOGC, when set,
	// wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	in, err := o.input(as)
	if err != nil {
		return nil, err
	}
	if o.Detach && !in.keeper {
		return nil, detach(o)
	}
	if in.keeper {
		// The first tfhive chose the run id and made the log dir.
		o.Job.Name, o.LogDir = keeper.RunID(), keeper.LogDir()
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return nil, err
	}
	defer fleet.Close()
	r, err := o.newJob(fleet, in, as)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if r.notifier.Active() {
		// A run kept on its hosts (--reconnect) may end without this
		// tfhive: its end is claimed there, told once.
		r.tell = func(sum *record.Summary, err error) {
			if sum == nil && o.Wait == 0 {
				// Refused at once: whoever started it reads why.
				return
			}
			tellEnd(ctx, r.notifier, sum, err, o.Reconnect > 0, fleetExecs(fleet))
		}
	}
	sum, err := job.Run(ctx, r.spec, r.hooks)
	return sum, o.finish(sum, err, r)
}

// input refuses, before anything else, what no run of o could do, and
// says where the console goes: stdout, or stderr under --json.
func (o *RunOptions) input(as runAs) (runInput, error) {
	in := runInput{keeper: keeper.Mode() && as.trial == nil}
	if o.Job.Name != "" && !in.keeper {
		// Before --detach's log dir (tfhive-runs/NAME) is made.
		if err := checkRunID("--name ", o.Job.Name); err != nil {
			return in, err
		}
	}
	if err := o.checkLinkFlags(as.trial != nil); err != nil {
		return in, err
	}
	out := o.Stdout
	if o.JSON {
		out = o.Stderr
	}
	color, err := o.colors(out)
	if err != nil {
		return in, err
	}
	if err := o.Job.checkCounts(); err != nil {
		return in, err
	}
	// A keeper reads them again: the first tfhive refuses bad ones.
	if in.caps, err = captures(o.Capture, o.CaptureFrom, o.Job.taskIDs()); err != nil {
		return in, err
	}
	if in.restart, err = restartPolicy(o.Restarts, o.RestartOn, o.RestartBackoff); err != nil {
		return in, err
	}
	if in.requeue, err = o.requeuePolicy(); err != nil {
		return in, err
	}
	in.restart.Requeue = in.requeue.On
	if in.stopSig, err = stopSignal(o.StopSignal); err != nil {
		return in, err
	}
	if as.trial == nil {
		if in.notify, err = notifyTargets(o.Notify, o.Hosts, o.Stderr); err != nil {
			return in, err
		}
	}
	in.out, in.color = out, color
	return in, nil
}

// runLogDir is the run's log dir: --log-dir, or tfhive-runs/RUN_ID.
func (o *RunOptions) runLogDir(id string) string {
	if o.LogDir != "" {
		return o.LogDir
	}
	return rundir.Path(id)
}
