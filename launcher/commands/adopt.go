package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/schedule"
)

// adopt is `tfhive attach RUN -H …`: this tfhive finds the run on the
// hosts and becomes its keeper, in the foreground, with a log dir of its
// own here. Ctrl-C, or its stdout closing, only detaches: the tasks go
// on, kept, until another keeper comes or --unattended passes.
func adopt(ctx context.Context, o FollowOptions) error {
	if err := checkRunID("", o.RunID); err != nil {
		return err
	}
	dir := o.LogDir
	if dir == "" {
		dir = rundir.Path(o.RunID)
	}
	if err := checkLogDir(dir, o.LogDir != ""); err != nil {
		return err
	}
	// The tasks are known once the run is found: --capture-from is
	// checked then.
	caps, err := captures(o.Capture, o.CaptureFrom, nil)
	if err != nil {
		return err
	}
	color, err := o.colors(o.Stdout)
	if err != nil {
		return err
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	found, err := findKept(ctx, fleet, o, caps)
	if err != nil {
		return err
	}
	console := launcher.NewColorConsole(o.Stdout, isTerminal(o.Stdout), color)
	lo := launcher.Options{
		Plan: found.plan, Hosts: found.hostOf, Execs: map[string]remote.Executor{},
		LogDir: dir, Grace: o.Grace, KeepAlive: fleet.KeepAlive, Parallel: o.Hosts.Parallel,
		Console: console, Reconnect: o.Reconnect, Redial: fleet.Redial,
		Adopted: true, Gen: found.gen + 1, Captures: caps, Sample: launcher.DefaultSample,
	}
	lo.Restart, lo.Mark, lo.Attempts = launcher.AdoptedRestart(o.RunID, found.runs)
	for _, h := range found.plan.Hosts() {
		lo.Execs[h] = found.execs[h]
	}
	release, err := rundir.HoldLock(dir)
	if err != nil {
		return err
	}
	defer release()
	type result struct {
		sum *record.Summary
		err error
	}
	done := make(chan result, 1)
	// The keeper's own lifecycle never ends on Ctrl-C: only this tfhive
	// does, and its sessions with it.
	go func() {
		sum, err := launcher.RunPlan(context.WithoutCancel(ctx), lo)
		done <- result{sum, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		console.Close()
		fmt.Fprintf(o.Stderr, "tfhive: detached from run %s; its tasks go on, kept, until a keeper attaches (tfhive attach %s -H …) or --unattended passes\n", o.RunID, o.RunID)
		// A closed stdout detaches as Ctrl-C does (the line above says
		// where the run stands: no longer kept here), exiting as every
		// command does then.
		if stdoutClosed(ctx) {
			return ErrStdoutClosed
		}
		return &ExitError{Code: 130}
	}
	return adoptedEnd(o, dir, console, res.sum, res.err)
}

// keptRun is a run found kept on the hosts, for adopt.
type keptRun struct {
	plan   *schedule.Plan
	gen    int
	runs   []launcher.FoundRun
	execs  map[string]remote.Executor
	hostOf map[string]inventory.Host
}

// findKept probes the fleet and finds the run on its hosts.
func findKept(ctx context.Context, fleet *probe.Fleet, o FollowOptions, caps *launcher.Captures) (*keptRun, error) {
	inv, err := probeAll(ctx, fleet)
	if err != nil {
		return nil, err
	}
	execs := map[string]remote.Executor{}
	hostOf := map[string]inventory.Host{}
	var searched []string
	for i, h := range fleet.Hosts {
		hostOf[h.Name] = h
		if inv.Hosts[i].Err == nil {
			execs[h.Name] = fleet.Executor(i)
			searched = append(searched, h.Name)
		}
	}
	runs := launcher.FindRun(ctx, execs, o.RunID, o.Hosts.Parallel)
	plan, gen, err := launcher.AdoptedPlan(o.RunID, runs)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, launcher.ErrNoSuchRun) {
			msg = fmt.Sprintf("no run %s on %s", o.RunID, strings.Join(searched, ", "))
		}
		if uerr := job.Unreachable(inv); uerr != nil {
			msg += " (" + uerr.Error() + ")"
		}
		return nil, &NoRunError{Msg: msg}
	}
	if caps != nil && caps.From != "" {
		if err := knownTask("--capture-from", caps.From, planTaskIDs(plan)); err != nil {
			return nil, err
		}
	}
	return &keptRun{plan: plan, gen: gen, runs: runs, execs: execs, hostOf: hostOf}, nil
}

// adoptedEnd prints the adopted run's summary and report, and says how
// it ended.
func adoptedEnd(o FollowOptions, dir string, console *launcher.Console, sum *record.Summary, err error) error {
	if cerr := console.Close(); err == nil {
		err = cerr
	}
	if sum == nil {
		return err
	}
	view.WriteSummary(o.Stdout, sum)
	writeRunReport(dir, o.RunID, o.Stderr)
	if err != nil {
		return err
	}
	if sum.ExitCode != 0 {
		return &RunFailedError{Summary: sum}
	}
	return nil
}
