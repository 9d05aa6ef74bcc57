package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweepjob"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/wording"
)

// KillOptions are `tfhive kill`'s.
type KillOptions struct {
	Streams
	Hosts HostOptions
	RunID string
	Grace time.Duration // SIGTERM → SIGKILL
}

// Kill stops a run's tasks on every host where it holds claims: only the
// user's own runs, or any when the user is root.
func Kill(ctx context.Context, o KillOptions) error {
	if o.Grace < 0 {
		return usagef("--grace must not be negative")
	}
	if err := checkRunID("", o.RunID); err != nil {
		return err
	}
	if handled, err := killSlurm(ctx, o); handled {
		return err
	}
	// A sweep of this log root: its tfhive is asked to stop its trials and
	// start no more (stopSweep); then whatever of its trials still holds
	// GPUs on the hosts is stopped from here, as a run is.
	ids := map[string]bool{o.RunID: true}
	sweepDir := rundir.Path(o.RunID)
	rec, isSweep, err := logroot.Sweep(sweepDir)
	if err != nil {
		return err
	}
	sweepStopped := false
	if isSweep {
		for _, t := range rec.Trials {
			ids[t.ID] = true
		}
		if sweepStopped, err = stopSweep(ctx, o, sweepDir); err != nil {
			return err
		}
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	k, err := killRun(ctx, fleet, inv, o.RunID, ids, o.Grace, o.Hosts.Parallel, hostsFrom(o.Hosts))
	if k.none && sweepStopped {
		// Its tfhive stopped every trial: nothing is left.
		return job.Unreachable(inv)
	}
	if err != nil {
		return err
	}
	for _, w := range k.warnings {
		fmt.Fprintf(o.Stderr, "tfhive: warning: %s\n", w)
	}
	for _, line := range k.said {
		fmt.Fprintf(o.Stdout, "tfhive: %s\n", line)
	}
	if len(k.failed) > 0 {
		return errors.New("could not stop run " + o.RunID + " everywhere: " + strings.Join(k.failed, "; "))
	}
	return job.Unreachable(inv)
}

// killed is what killRun did: a line per run and host where it stopped
// the run (or found it ended), the hosts where it failed, and the claims
// left alone (another user's); none: no claim of the runs was found.
type killed struct {
	said, failed, warnings []string
	none                   bool
}

// killRun stops the tasks of the runs ids (run id, or a sweep's trials)
// on the hosts of inv (fleet's last probe) where they hold claims: only
// the user's own runs, or any when the user is root. kill and top's stop
// share it; from is hostsFrom, for the error when nothing is held.
func killRun(ctx context.Context, fleet *probe.Fleet, inv inventory.Inventory, id string, ids map[string]bool,
	grace time.Duration, parallel int, from string) (killed, error) {
	targets, execs, others := hostops.Targets(fleet, inv, id, ids)
	var k killed
	if len(targets) == 0 {
		k.none = true
		if err := job.Unreachable(inv); err != nil {
			return k, err
		}
		if len(others) > 0 {
			return k, fmt.Errorf("run %s is not yours to stop: %s; only they or root can stop it", id, strings.Join(others, "; "))
		}
		if from != "" {
			return k, fmt.Errorf("no run %s holds GPUs or ports on these hosts (%s)", id, from)
		}
		return k, fmt.Errorf("no run %s holds GPUs or ports on these hosts", id)
	}
	for _, other := range others {
		k.warnings = append(k.warnings, other+"; left alone")
	}
	for _, res := range hostops.Kill(ctx, targets, execs, grace, parallel) {
		switch {
		case res.Err != nil:
			k.failed = append(k.failed, res.Host+": "+res.Err.Error())
		case res.Tasks == 0:
			k.said = append(k.said, fmt.Sprintf("run %s on %s had already ended", res.RunID, res.Host))
		default:
			k.said = append(k.said, fmt.Sprintf("stopped run %s on %s (%s)", res.RunID, res.Host, wording.Count(res.Tasks, "task")))
		}
	}
	return k, nil
}

// sweepStopMargin is how long, past kill's --grace, kill waits for a
// sweep's tfhive to stop its trials before stopping them itself.
const sweepStopMargin = 5 * time.Second

// stopSweep asks the tfhive of the sweep in dir, if one runs it, to stop
// its trials and start no more (sweepjob.AskStop), and waits for its
// end: at most --grace and sweepStopMargin, then kill stops the trials
// on the hosts itself (a tfhive that hangs, or is stopped). True when it
// ended.
func stopSweep(ctx context.Context, o KillOptions, dir string) (bool, error) {
	if asked, err := sweepjob.AskStop(dir); !asked || err != nil {
		return false, err
	}
	fmt.Fprintf(o.Stdout, "tfhive: sweep %s: asked its tfhive to stop its trials and start no more\n", o.RunID)
	wctx, cancel := context.WithTimeout(ctx, o.Grace+sweepStopMargin)
	defer cancel()
	if err := rundir.WaitEnd(wctx, dir); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		fmt.Fprintf(o.Stderr, "tfhive: warning: sweep %s's tfhive did not end within %s; stopping its trials on the hosts\n", o.RunID, o.Grace+sweepStopMargin)
		return false, nil
	}
	fmt.Fprintf(o.Stdout, "tfhive: sweep %s stopped (tfhive runs --sweep %s shows its trials)\n", o.RunID, o.RunID)
	return true, nil
}
