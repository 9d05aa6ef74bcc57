package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/tfhive/tfhive/launcher/hostlogs"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/probe/remote"
)

// hostLogs is `tfhive logs RUN -H …`: a kept run's task output, read from
// the run's directories on the hosts (for a run started elsewhere, whose
// log dir is not here), over the probe's connections: one round trip each
// after the probe. Every check of the command line comes before a host is
// dialled.
func hostLogs(ctx context.Context, o FollowOptions) error {
	if err := checkRunID("", o.RunID); err != nil {
		return err
	}
	if o.LogDir != "" {
		return &UsageError{Msg: "--log-dir and -H or --hosts: logs reads this machine's log dir or the hosts, not both"}
	}
	if o.Task != "" && !validTaskID(o.Task) {
		return usagef("--task %q: want ROLE:INDEX, as worker:1", o.Task)
	}
	if o.Follow && o.Task == "" {
		return &UsageError{Msg: "logs -f with -H or --hosts follows one task", Fix: "add --task ROLE:INDEX (without -f, logs prints every task's output)"}
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
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	var hosts []string
	execs := map[string]remote.Executor{}
	for i, h := range fleet.Hosts {
		if inv.Hosts[i].Err == nil {
			hosts = append(hosts, h.Name)
			execs[h.Name] = fleet.Executor(i)
		}
	}
	res := hostlogs.Print(ctx, hosts, execs, hostlogs.Options{
		RunID: o.RunID, Task: o.Task, Follow: o.Follow, Stdout: o.Stdout, Stderr: o.Stderr,
		TTY: isTerminal(o.Stdout), Color: color, Parallel: o.Hosts.Parallel,
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	return hostLogsEnd(o, res, hosts, job.Unreachable(inv))
}

// hostLogsEnd says how logs -H ended: found (whole only if every host
// answered), or why no task was.
func hostLogsEnd(o FollowOptions, res []hostlogs.Result, hosts []string, uerr error) error {
	found, hasRun := false, false
	var failed, refused []string
	for _, r := range res {
		found = found || r.Found
		switch {
		case r.Err != nil:
			failed = append(failed, r.Host+": "+r.Err.Error())
		case strings.HasPrefix(r.None, "no task "):
			hasRun = true
		case r.None != "" && !strings.HasPrefix(r.None, "no trace of run "):
			refused = append(refused, r.Host+": "+r.None)
		}
	}
	if found {
		// One task found is all there is to it; every task's output is
		// whole only if every host answered.
		switch {
		case o.Task != "" || len(failed) == 0 && uerr == nil:
			return nil
		case len(failed) > 0:
			return fmt.Errorf("could not read the logs on %s", strings.Join(failed, "; "))
		}
		return uerr
	}
	if len(hosts) == 0 {
		return uerr
	}
	msg := fmt.Sprintf("no run %s on %s", o.RunID, strings.Join(hosts, ", "))
	if hasRun {
		msg = fmt.Sprintf("run %s has no task %s on %s", o.RunID, o.Task, strings.Join(hosts, ", "))
	}
	if extra := append(refused, failed...); len(extra) > 0 {
		msg += " (" + strings.Join(extra, "; ") + ")"
	}
	if uerr != nil {
		msg += " (" + uerr.Error() + ")"
	}
	return &NoRunError{Msg: msg}
}

// validTaskID: ROLE:INDEX as tfhive names tasks (worker:1), which names
// its files on the hosts.
func validTaskID(s string) bool {
	role, index, ok := strings.Cut(s, ":")
	if !ok || role == "" || index == "" || strings.Trim(role, "abcdefghijklmnopqrstuvwxyz_") != "" || strings.Trim(index, "0123456789") != "" {
		return false
	}
	return true
}
