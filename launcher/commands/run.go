package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/schedule"
)

// DefaultReconnect is --reconnect's default.
const (
	DefaultReconnect  = launcher.DefaultReconnect
	DefaultUnattended = launcher.DefaultUnattended
)

// RunOptions are `tfhive run`'s.
//
// A run's record (repro.json, repro.go) holds them as JSON, in Go's
// field names, for `tfhive rerun`: a field that JSON cannot carry is
// tagged out, and what a rerun must not repeat is cleared there.
type RunOptions struct {
	Streams `json:"-"`
	Hosts   HostOptions
	Job     Job
	// Env holds --env values: K=V, or K for this machine's value.
	Env            []string
	Workdir, Setup string // override the hosts file's when not empty
	LogDir         string // "" for tfhive-runs/RUN_ID
	Grace          time.Duration
	Timeout        time.Duration // 0: none
	Wait           time.Duration // --wait; 0: none
	// Reconnect is --reconnect: how long a dropped host is redialled
	// while its tasks run on (launcher.RunOptions.Reconnect); 0: never.
	Reconnect time.Duration
	// Unattended is --unattended: with --detach, how long the tasks run on
	// with no keeper before their supervisors stop them.
	Unattended time.Duration
	// Detach starts a keeper that runs the job (detach.go) and returns
	// once every task has started.
	Detach bool
	Quiet  bool
	JSON   bool // the summary as JSON on stdout, task output on stderr
	// Check runs doctor's checks on the plan's hosts before claiming
	// anything, importing Imports too, and refuses to start when they
	// differ (a *CheckError).
	Check   bool
	Imports []string
	// Capture are --capture NAME=REGEX values, CaptureFrom
	// --capture-from's task ("": every task).
	Capture     []string
	CaptureFrom string
	// Sample is --sample: how often the tasks' GPUs are sampled; 0: never.
	Sample time.Duration
	// Restarts, RestartOn and RestartBackoff are --restarts,
	// --restart-on and --restart-backoff (lifecycle.Restart).
	Restarts       int
	RestartOn      string
	RestartBackoff time.Duration
	// Signals routes SIGINT/SIGTERM to the launcher while tasks run; nil,
	// none do.
	Signals *Signals `json:"-"`
	// rerun: this run runs the recorded one again (rerun.go); nil
	// otherwise.
	rerun *rerunOf
	// trial, set by a sweep, makes this run one of its trials
	// (sweep.go): never a keeper, even in a detached sweep's, and its log
	// dir made and checked by the sweep.
	trial *trialHooks
	// tree is the --sync tree when the caller has already listed and
	// hashed it: a rerun, for its comparison; a sweep, once for all its
	// trials. nil: Run prepares it.
	tree *codesync.Tree
}

// Run plans the job, starts it, streams its output and prints the summary.
// It plans and starts again, as launcher.Retry decides, when claims were
// lost to another run or (under --wait) there were not enough GPUs. A run
// that did not succeed is a *RunFailedError.
func Run(ctx context.Context, o RunOptions) error {
	// A run is a long, mostly idle supervisor of many streams whose CPU
	// goes on starting them: collecting garbage more often keeps its heap
	// near what is live, for a few milliseconds of CPU. GOGC, when set,
	// wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	keeper := keeperMode() && o.trial == nil
	if o.Job.Name != "" && !keeper {
		// Before --detach's log dir (tfhive-runs/NAME) is made.
		if err := checkRunID("--name ", o.Job.Name); err != nil {
			return err
		}
	}
	if err := o.checkLinkFlags(); err != nil {
		return err
	}
	// The console: stdout, or stderr under --json.
	out := o.Stdout
	if o.JSON {
		out = o.Stderr
	}
	color, err := o.colors(out)
	if err != nil {
		return err
	}
	if err := o.Job.checkCounts(); err != nil {
		return err
	}
	// A keeper reads them again: the first tfhive refuses bad ones.
	caps, err := captures(o.Capture, o.CaptureFrom, o.Job.taskIDs())
	if err != nil {
		return err
	}
	restart, err := restartPolicy(o.Restarts, o.RestartOn, o.RestartBackoff)
	if err != nil {
		return err
	}
	if o.Detach && !keeper {
		return detach(o)
	}
	if keeper {
		// The first tfhive chose the run id and made the log dir.
		o.Job.Name, o.LogDir = os.Getenv(keeperRunEnv), os.Getenv(keeperLogDirEnv)
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	tree := o.tree
	if tree == nil {
		if tree, err = o.Job.prepareSync(o.LogDir, o.Stderr); err != nil {
			return err
		}
	}
	launched := startLaunchState()
	req, err := o.Job.request(fleet.Hosts, "run", tree)
	if err != nil {
		return err
	}
	env, err := parseEnv(o.Env)
	if err != nil {
		return err
	}
	mods, err := o.checkTimesAndImports()
	if err != nil {
		return err
	}
	logDir := o.LogDir
	if logDir == "" {
		logDir = rundir.Path(req.RunID)
	}
	if !keeper && o.trial == nil {
		if err := checkLogDir(logDir, o.LogDir != ""); err != nil {
			return err
		}
	}
	defer fleet.Close()
	var sender *syncer
	if tree != nil {
		// The probe says which hosts have the tree: those cost nothing more.
		fleet.LookForCode(tree.Hash)
		sender = newSyncer(tree, fleet, o.Hosts.Parallel, o.Stderr)
	}
	// Each host's probe session goes on as its first task's supervisor,
	// started before the plan is known: the task then starts without a
	// session of its own (two round trips, sshd's fork, a login shell).
	fleet.KeepSessions(supervisor.Command)

	console := launcher.NewColorConsole(out, isTerminal(out), color)
	// Every run keeps its console, console.log: a detached run's keeper
	// writes it as its stdout; a foreground run's terminal is recorded
	// there too (a sweep's trial has its own).
	var conlog *launcher.ConsoleLog
	if !keeper && o.trial == nil {
		conlog = launcher.NewConsoleLog(filepath.Join(logDir, rundir.Console))
		console.Record(conlog)
	}
	sigs := o.Signals
	if sigs == nil {
		sigs = NewSignals(func(error) {})
	}
	lo := launcher.RunOptions{
		Env: env, Workdir: o.Workdir, Setup: o.Setup,
		LogDir: logDir, Grace: o.Grace, Timeout: o.Timeout,
		Reconnect: o.Reconnect, Redial: fleet.Redial, Started: keeperStarted,
		Unattended: o.Unattended, Captures: caps, Sample: o.Sample, Restart: restart, Command: o.Job.Command,
		KeepAlive: fleet.KeepAlive, Parallel: o.Hosts.Parallel,
		// A keeper's console is the run's record: -q quietens a
		// terminal, never the record.
		Console: console, Quiet: o.Quiet && !keeper, HostsFrom: hostsFrom(o.Hosts),
		Hosts: map[string]inventory.Host{}, Execs: map[string]remote.Executor{},
	}
	for _, h := range fleet.Hosts {
		lo.Hosts[h.Name] = h
	}
	check := &planCheck{done: map[string]doctor.Host{}, opts: doctor.Options{
		Modules: mods, Workdir: o.Workdir, Setup: o.Setup, Env: env,
		Timeout: o.Hosts.CommandTimeout, Parallel: o.Hosts.Parallel,
	}}
	var release func()
	defer func() {
		if release != nil {
			release()
		}
	}()
	// The ports every plan of this run gave, by host: a plan made again
	// without a lost host keeps off them. A host that was only cut off
	// may still run its old attempt until its supervisor gives up (for a
	// detached run, --unattended); on other ports, that attempt cannot
	// reach, or be reached by, the new one.
	used := map[string][]int{}
	// The run's place among waiting runs: when it began to wait, held
	// on the hosts as tickets while it waits (see "Fair sharing").
	req.QueueSince = time.Now()
	// A sweep's trial waits behind whoever waits ahead, never backfilling:
	// a sweep must not starve a colleague's larger run.
	req.NoBackfill = o.trial != nil
	var tickets *hostops.Tickets
	defer func() { tickets.Release() }()
	// The tickets' hosts say when their locks change: the wait between
	// probes then ends at once.
	wake := make(chan struct{}, 1)
	startedOnce := false
	// While it waits, one line says why (waitline.go); the last probe's
	// tickets give its place in the queue.
	wl := newWaitLine(o.Stderr, redraws(o.Stderr))
	var lastInv inventory.Inventory
	mk := schedule.Make
	if o.trial != nil && o.trial.book != nil {
		mk = bookedPlanner(o.trial.book)
	}
	attempt := func(ctx context.Context) (*record.Summary, error) {
		if o.trial != nil && o.trial.book != nil {
			// A sweep's trial holds its place in the sweep's book for
			// this attempt: until its tasks end, or its start fails.
			defer o.trial.book.Drop(req.RunID)
		}
		var avoid map[string][]int
		if lo.Relaunch != nil {
			avoid = used
		}
		plan, inv, err := probeAndPlan(ctx, fleet, req, wl, avoid, mk)
		lastInv = inv
		if !startedOnce {
			// Once this run has started, its id's claims may be its own.
			if used := nameInUse(inv, req.RunID); used != nil {
				return nil, used
			}
		}
		if err != nil {
			if o.Wait > 0 && errors.As(err, new(*schedule.CapacityError)) {
				if tickets == nil {
					tickets = hostops.HoldTickets(ctx, fleetExecs(fleet), req, wake)
				}
				preempt(ctx, fleet, tickets, inv, req, wl)
			}
			return nil, err
		}
		wl.done()
		planPorts(plan, used)
		lo.Priority, lo.Preemptible = req.Priority, schedule.PreemptibleBy(inv, req.Priority)
		// The tickets are given up once every task holds its claims: a
		// claim lost to a run ahead (that took other GPUs than the queue
		// kept for it) keeps this run's place while it plans again.
		lo.Started = func() {
			tickets.Release()
			keeperStarted()
			if o.trial != nil {
				o.trial.started()
			}
		}
		if sender != nil {
			// Hosts without a task need no tree, nor their spare session.
			fleet.KeepSpares(plan.Hosts())
			if lo.Code, err = sender.send(ctx, plan.Code); err != nil {
				return nil, err
			}
		}
		// The check looks where the tasks will be: in the tree, when
		// there is one.
		if o.Check {
			check.opts.Code = codeDirs(plan.Code)
			if err := check.check(ctx, fleet, inv, plan); err != nil {
				return nil, err
			}
		}
		if release == nil {
			if release, err = rundir.HoldLock(logDir); err != nil {
				return nil, err
			}
			writeRepro(logDir, newRepro(o, req.RunID, launched, fleet, tree, plan, inv, check.done), o.Stderr)
		}
		startedOnce = true
		return start(ctx, fleet, plan, lo, sigs, o.Stderr)
	}
	retry := launcher.Retry{
		Wait: o.Wait, Wake: wake,
		Waiting: func(err error, delay, left time.Duration) {
			if o.Wait > 0 {
				// The line says it all: no "probing hosts" line a retry.
				fleet.NoProgress()
			}
			shown := o.Wait
			if shown >= sweepForever {
				// A sweep's trial without --wait waits until the sweep
				// ends: no time left to say.
				shown = 0
			}
			wl.show(waiting(err, schedule.Ahead(lastInv, req), o.Wait > 0, left, shown))
		},
	}
	sum, err := retry.Do(ctx, attempt)
	wl.done()
	if err == nil {
		sum = relaunch(ctx, sum, restart, &lo, fleet, retry, attempt)
	}
	if cerr := console.Close(); err == nil {
		err = cerr
	}
	if conlog != nil {
		if sum != nil {
			view.WriteSummary(conlog, sum)
		}
		conlog.Close()
	}
	if sum == nil {
		return err
	}
	if o.JSON {
		record.WriteSummaryJSON(o.Stdout, sum)
	} else {
		view.WriteSummary(o.Stdout, sum)
	}
	var recErr *record.RecordError
	if !errors.As(err, &recErr) {
		// After the summary, which the user reads meanwhile; not where
		// the summary could not be written.
		writeRunReport(logDir, sum.RunID, o.Stderr)
	}
	if errors.As(err, &recErr) && sum.ExitCode != 0 {
		// A failed run keeps its own exit code: what the task said
		// matters more to a script than the local record.
		fmt.Fprintf(o.Stderr, "tfhive: error: %v\n", err)
		err = nil
	}
	if err != nil {
		return err
	}
	if sum.ExitCode != 0 {
		return &RunFailedError{Summary: sum}
	}
	return nil
}

// planPorts adds the ports plan gives to used, by host: each task's, and
// a torch world's MASTER_PORT on rank 0's host.
func planPorts(plan *schedule.Plan, used map[string][]int) {
	for _, t := range plan.Tasks {
		if t.Port > 0 {
			used[t.Host] = append(used[t.Host], t.Port)
		}
		if _, port, err := net.SplitHostPort(plan.Master); err == nil && t.Env["RANK"] == "0" {
			if p, err := strconv.Atoi(port); err == nil {
				used[t.Host] = append(used[t.Host], p)
			}
		}
	}
}

// start is the one call of launcher.Run: the plan's tasks start over the
// probe's connections, and signals go to the launcher while they run.
func start(ctx context.Context, fleet *probe.Fleet, plan *schedule.Plan, o launcher.RunOptions, sigs *Signals, stderr io.Writer) (*record.Summary, error) {
	fleet.KeepSpares(plan.Hosts())
	o.Plan = plan
	for i, h := range fleet.Hosts {
		o.Execs[h.Name] = fleet.Executor(i)
	}
	if !sigs.toLauncher() {
		return nil, context.Canceled
	}
	defer sigs.toContext()
	// While tasks run, the first signal stops the run gracefully (the
	// cause says which signal), a second one kills at once. A closed
	// stdout is said here, on stderr, as the stop begins: the console,
	// where the run says what it does, is gone, and the stop may take
	// --grace. It never counts as the second signal: it asks nothing.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	kill := make(chan struct{})
	o.KillNow = kill
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs.run:
			if sig == launcher.StdoutClosed {
				fmt.Fprintf(stderr, "tfhive: error: %s: stopping the run\n", launcher.StdoutClosed)
			}
			stop(launcher.Interrupt(sig))
		case <-done:
			return
		}
		for {
			select {
			case sig := <-sigs.run:
				if sig == launcher.StdoutClosed {
					continue
				}
				close(kill)
			case <-done:
			}
			return
		}
	}()
	return launcher.Run(ctx, o)
}

// parseEnv reads --env K=V and --env K (this machine's value). Nothing
// else from the local environment reaches the tasks.
func parseEnv(specs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, s := range specs {
		k, v, hasValue := strings.Cut(s, "=")
		if !envNameRE.MatchString(k) {
			return nil, usagef("--env %q: %q is not a variable name", s, k)
		}
		if !hasValue {
			local, ok := os.LookupEnv(k)
			if !ok {
				return nil, &UsageError{Msg: fmt.Sprintf("--env %s: %s is not set here", k, k), Fix: "write --env " + k + "=VALUE, or export it first"}
			}
			v = local
		}
		env[k] = v
	}
	return env, nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fleetExecs are the fleet's open connections, by host.
func fleetExecs(fleet *probe.Fleet) []remote.Executor {
	execs := make([]remote.Executor, len(fleet.Hosts))
	for i := range fleet.Hosts {
		execs[i] = fleet.Executor(i)
	}
	return execs
}

// checkLinkFlags: --detach, --unattended and --sample, which Run checks
// first and a sweep for all its trials.
func (o *RunOptions) checkLinkFlags() error {
	if o.Detach && o.Reconnect == 0 {
		return &UsageError{Msg: "--detach needs --reconnect: a detached run's tasks outlive the sessions that started them", Fix: "drop --reconnect 0"}
	}
	// A detached sweep's trials run on unattended as a detached run does.
	if !o.Detach && o.Unattended != 0 && o.trial == nil {
		return &UsageError{Msg: "--unattended is for --detach", Fix: "a run in the foreground stops its tasks --reconnect after its link is gone"}
	}
	if o.Sample < 0 || (o.Sample > 0 && o.Sample < launcher.MinSample) {
		return &UsageError{Msg: fmt.Sprintf("--sample must be 0 (never) or at least %s", launcher.MinSample)}
	}
	return nil
}

// checkTimesAndImports: no negative duration, --import only with --check
// and only Python module names; the modules --check imports.
func (o *RunOptions) checkTimesAndImports() ([]string, error) {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"grace", o.Grace}, {"timeout", o.Timeout}, {"wait", o.Wait}, {"reconnect", o.Reconnect}, {"unattended", o.Unattended}} {
		if d.v < 0 {
			return nil, usagef("--%s must not be negative", d.flag)
		}
	}
	if len(o.Imports) > 0 && !o.Check {
		return nil, &UsageError{Msg: "--import is for --check", Fix: "add --check, or see tfhive doctor --import"}
	}
	return doctorModules(o.Imports)
}
