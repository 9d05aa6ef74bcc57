package commands

import (
	"context"
	"path/filepath"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/notify"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// runJob is a run's job.Spec and hooks, and what Run keeps of them to
// print the end: the console, its record, the run lock.
type runJob struct {
	spec    job.Spec
	hooks   job.Hooks
	logDir  string
	console *launcher.Console
	conlog  *launcher.ConsoleLog
	wait    *view.WaitLine
	release func() // the run lock, once taken
	// notifier is --notify's (nil without); tell tells the run's end,
	// after the summary (nil without targets).
	notifier *notify.Notifier
	tell     func(*record.Summary, error)
}

// close gives up the run lock: after the summary is printed, so that
// whoever waits for the run's end reads it whole.
func (r *runJob) close() {
	if r.release != nil {
		r.release()
	}
}

// newJob reads what is left of o (the --sync tree, the request, --env,
// --check's modules) and makes the run's job over fleet.
func (o *RunOptions) newJob(fleet *probe.Fleet, in runInput, as runAs) (*runJob, error) {
	var err error
	tree := as.tree
	if tree == nil {
		if tree, err = o.Job.prepareSync(o.LogDir, o.Stderr); err != nil {
			return nil, err
		}
	}
	launched := as.launched
	if launched == nil {
		launched = startLaunchState()
	}
	req, err := o.Job.request(fleet.Hosts, "run", tree)
	if err != nil {
		return nil, err
	}
	// A run that ends before a reservation begins may use its GPUs: it
	// ends, at the latest, its grace after its timeout.
	req.Timeout, req.Grace = o.Timeout, o.Grace
	env, err := parseEnv(o.Env)
	if err != nil {
		return nil, err
	}
	mods, err := o.checkTimesAndImports()
	if err != nil {
		return nil, err
	}
	r := &runJob{logDir: o.runLogDir(req.RunID), wait: view.NewWaitLine(o.Stderr, redraws(o.Stderr), func() int { return termWidth(o.Stderr) })}
	if !in.keeper && as.trial == nil {
		if err := checkLogDir(r.logDir, o.LogDir != ""); err != nil {
			return nil, err
		}
	}
	// A sweep's trial waits behind whoever waits ahead, never backfilling:
	// a sweep must not starve a colleague's larger run.
	req.NoBackfill = as.trial != nil
	// A sweep's trial without --wait waits its turn until the sweep ends.
	r.spec = job.Spec{Request: req, Fleet: job.FleetOf(fleet), Wait: o.Wait, WaitForever: as.trial != nil && o.Wait == 0, Notes: r.wait, Requeue: in.requeue}
	if tree != nil {
		// The probe says which hosts have the tree: those cost nothing more.
		fleet.LookForCode(tree.Hash)
		r.spec.Sync = newSyncer(tree, o.Hosts.Parallel, o.Stderr)
	}
	if o.Check {
		r.spec.Check = &doctor.Options{Modules: mods, Workdir: o.Workdir, Setup: o.Setup, Env: env,
			Timeout: max(o.Hosts.CommandTimeout, doctor.MinTimeout), Parallel: o.Hosts.Parallel}
	}
	// Each host's probe session goes on as its first task's supervisor,
	// started before the plan is known: the task then starts without a
	// session of its own (two round trips, sshd's fork, a login shell).
	fleet.KeepSessions(supervisor.Command)
	r.console = launcher.NewColorConsole(in.out, isTerminal(in.out), in.color)
	// Every run keeps its console, console.log: a detached run's keeper
	// writes it as its stdout; a foreground run's terminal is recorded
	// there too (a sweep's trial has its own).
	if !in.keeper && as.trial == nil {
		r.conlog = launcher.NewConsoleLog(filepath.Join(r.logDir, rundir.Console))
		r.console.Record(r.conlog)
	}
	r.notifier = newNotifier(in.notify, req.RunID, r.logDir, o.Stderr)
	r.spec.Engine = o.engine(fleet, env, in, r)
	r.spec.Engine.OnEvent = onEvent(r.notifier)
	r.hooks = o.hooks(r, fleet, launched, tree, as)
	return r, nil
}

// engine is the engine's options for every attempt of the run.
func (o *RunOptions) engine(fleet *probe.Fleet, env map[string]string, in runInput, r *runJob) launcher.Options {
	lo := launcher.Options{
		Env: env, Workdir: o.Workdir, Setup: o.Setup,
		LogDir: r.logDir, Grace: o.Grace, StopSignal: in.stopSig, Timeout: o.Timeout,
		Reconnect: o.Reconnect, Redial: fleet.Redial,
		Unattended: o.Unattended, Captures: in.caps, Sample: o.Sample, IdleStop: o.IdleStop, Restart: in.restart, Command: o.Job.Command,
		KeepAlive: fleet.KeepAlive, Parallel: o.Hosts.Parallel,
		Hang: launcher.Hang{After: o.HangAfter, Stop: o.OnHang == OnHangStop, Native: o.HangNative},
		// A keeper's console is the run's record: -q quietens a
		// terminal, never the record.
		Console: r.console, Quiet: o.Quiet && !in.keeper, HostsFrom: hostsFrom(o.Hosts),
		Hosts: map[string]inventory.Host{},
	}
	for _, h := range fleet.Hosts {
		lo.Hosts[h.Name] = h
	}
	return lo
}

// hooks are what the run does at the job's steps: its wait line, the run
// lock and repro.json before the first claims, the keeper's word once
// started, the signals while tasks run; a sweep's trial's book.
func (o *RunOptions) hooks(r *runJob, fleet *probe.Fleet, launched *launchState, tree *codesync.Tree, as runAs) job.Hooks {
	sigs := o.Signals
	if sigs == nil {
		sigs = job.NewSignals(func(error) {})
	}
	req := r.spec.Request
	h := job.Hooks{
		Waiting: func(w job.Waiting) { r.wait.Show(view.WaitingFor(w.Err, w.Ahead, w.Queued, w.Left, w.Wait)) },
		Waited:  r.wait.Done,
		Claim: func(plan *schedule.Plan, inv inventory.Inventory, checked map[string]doctor.Host) error {
			var err error
			if r.release, err = rundir.HoldLock(r.logDir); err != nil {
				return err
			}
			writeRepro(r.logDir, newRepro(*o, as, req.RunID, launched, fleet, tree, plan, inv, checked), o.Stderr)
			return nil
		},
		Started: func() {
			if keeper.Mode() {
				// Its console is its stdout, console.log: the first
				// tfhive returns on "started" and may read it at once.
				r.console.Flush()
			}
			keeper.Started()
			if as.trial != nil {
				as.trial.started()
			}
		},
		Start: func(ctx context.Context, lo launcher.Options) (*record.Summary, error) {
			return sigs.Start(ctx, lo, o.Stderr)
		},
	}
	if as.trial != nil && as.trial.book != nil {
		// A sweep's trial holds its place in the sweep's book for each
		// attempt: until its tasks end, or its start fails.
		h.Plan = job.BookPlanner(as.trial.book)
		h.AttemptDone = func() { as.trial.book.Drop(req.RunID) }
	}
	return h
}
