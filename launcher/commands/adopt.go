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
	hang := RunOptions{HangAfter: o.HangAfter, OnHang: o.OnHang, HangNative: o.HangNative}
	if err := hang.checkHangFlags(); err != nil {
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
	targets, err := notifyTargets(o.Notify, o.Hosts, o.Stderr)
	if err != nil {
		return err
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	lo, execs, err := findKept(ctx, fleet, o, caps)
	if err != nil {
		return err
	}
	console := launcher.NewColorConsole(o.Stdout, isTerminal(o.Stdout), color)
	lo.Execs = map[string]remote.Executor{}
	lo.LogDir, lo.Grace, lo.KeepAlive, lo.Parallel = dir, o.Grace, fleet.KeepAlive, o.Hosts.Parallel
	lo.Console, lo.Reconnect, lo.Redial, lo.Captures = console, o.Reconnect, fleet.Redial, caps
	lo.Hang = launcher.Hang{After: o.HangAfter, Stop: o.OnHang == OnHangStop, Native: o.HangNative}
	for _, h := range lo.Plan.Hosts() {
		lo.Execs[h] = execs[h]
	}
	// The rows it sees from now on, and its end, claimed on the hosts
	// (a second attach -H of the ended run tells it no more).
	n := newNotifier(targets, o.RunID, dir, o.Stderr)
	lo.OnEvent = onEvent(n)
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
			return launcher.ErrStdoutClosed
		}
		return &ExitError{Code: 130}
	}
	err = adoptedEnd(o, dir, console, res.sum, res.err)
	if res.sum != nil {
		tellEnd(ctx, n, res.sum, res.err, true, lo.Execs)
	}
	return err
}

// findKept probes the fleet and finds the run on its hosts: what a keeper
// that adopts it runs, with its hosts, and the connections that answered.
func findKept(ctx context.Context, fleet *probe.Fleet, o FollowOptions, caps *launcher.Captures) (launcher.Options, map[string]remote.Executor, error) {
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return launcher.Options{}, nil, err
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
	found := launcher.FindRun(ctx, execs, o.RunID, o.Hosts.Parallel)
	lo, err := launcher.AdoptedOptions(o.RunID, found)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, launcher.ErrNoSuchRun) {
			msg = fmt.Sprintf("no run %s on %s", o.RunID, strings.Join(searched, ", ")) + launcher.Unasked(found)
		}
		if uerr := job.Unreachable(inv); uerr != nil {
			msg += " (" + uerr.Error() + ")"
		}
		return launcher.Options{}, nil, &NoRunError{Msg: msg}
	}
	if caps != nil && caps.From != "" {
		if err := knownTask("--capture-from", caps.From, planTaskIDs(lo.Plan)); err != nil {
			return launcher.Options{}, nil, err
		}
	}
	lo.Hosts = hostOf
	return lo, execs, nil
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
