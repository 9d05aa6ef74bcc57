package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/launcher/sweepjob"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// `tfhive sweep`: its flags checked and expanded into the sweep's record
// (record.Sweep), each trial's run flags made into its run
// (launcher/sweepjob runs the trials, each through job.Run), and the
// table of results printed.

// SweepOptions are `tfhive sweep`'s: the trials' run options, the sweep's
// own flags.
type SweepOptions struct {
	// Run are the run flags every trial gets; Run.Job.Name is the sweep's
	// name ("" for a new id), Run.Job.Command the command with {NAME}.
	Run    RunOptions
	Params []string // --param NAME=V1,V2,… values
	// Random is --random N (0: the whole grid), Seed --seed.
	Random      int
	Seed        int64
	MaxParallel int // 0: as many as the fleet's GPUs fit
	MaxFailures int // 0: no limit
	Sort        string
	Reverse     bool
	CSV         bool // the table as CSV; Run.JSON as JSON
}

// SweepFailedError: some trials did not succeed (or never ran); the table
// says which. tfhive exits 1.
type SweepFailedError struct {
	Name          string
	Failed, Total int
	Stopped       bool // stopped early: --max-failures or kill
}

func (e *SweepFailedError) Error() string {
	why := ""
	if e.Stopped {
		why = "; stopped before the end"
	}
	return fmt.Sprintf("sweep %s: %d of %d trials did not succeed%s", e.Name, e.Failed, e.Total, why)
}

// Hint says how to run the others again.
func (e *SweepFailedError) Hint() string {
	return "the same tfhive sweep command again runs only the trials that did not succeed"
}

// trialHooks is what a sweep's trial's run learns from the sweep.
type trialHooks struct {
	started func() // every task started
	// book keeps the sweep's trials off each other's GPUs (sweep.Book).
	book *sweep.Book
}

// Sweep runs the sweep, or, with --detach, starts a keeper that does.
func Sweep(ctx context.Context, o SweepOptions) error {
	if o.Run.Slurm.On != "" {
		return slurmSweep(ctx, o)
	}
	kept := keeper.Mode()
	rec, err := o.validate(kept)
	if err != nil {
		return err
	}
	fleet, err := openFleet(o.Run.Hosts, o.Run.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	trialGPUs, err := o.checkTrials(fleet.Hosts, rec)
	if err != nil {
		return err
	}
	dir := rundir.Path(rec.Name)
	old, resumed, err := logroot.Sweep(dir)
	if err != nil {
		return err
	}
	if resumed {
		if why := sweepDiffers(old, rec); why != "" {
			return &UsageError{Msg: fmt.Sprintf("sweep %s was run with another %s", rec.Name, why),
				Fix: "run it again as it was (tfhive runs --sweep " + rec.Name + " shows it), or choose another --name"}
		}
		if rundir.GoesOn(dir) {
			return &UsageError{Msg: fmt.Sprintf("sweep %s is running", rec.Name), Fix: "tfhive wait " + rec.Name + " waits for its end"}
		}
	} else if !kept {
		if err := checkLogDir(dir, false); err != nil {
			return err
		}
	}
	results := logroot.Results(rec)
	if !kept {
		for _, t := range rec.Trials {
			if results[t.ID] == record.ResultSucceeded {
				continue
			}
			tdir := rundir.Path(t.ID)
			if resumed && rundir.GoesOn(tdir) {
				return &UsageError{Msg: fmt.Sprintf("trial %s is running", t.ID), Fix: "tfhive kill " + t.ID + " stops it"}
			}
			if !resumed {
				if err := checkLogDir(tdir, false); err != nil {
					return err
				}
			}
		}
	}
	if o.Run.Detach && !kept {
		return o.detach(rec.Name, dir)
	}
	// The --sync tree is listed and hashed once for every trial: each
	// trial's run takes it as it is now.
	tree, err := o.Run.Job.prepareSync("", o.Run.Stderr)
	if err != nil {
		return err
	}
	return o.run(ctx, rec, trialGPUs, tree, false)
}

// checkTrials checks the trials' shape once, with the first trial's
// command, and every other trial's command after it: a bad one (a value
// that makes an unknown placeholder) is refused before anything starts.
// It returns how many GPUs a trial takes.
func (o *SweepOptions) checkTrials(hosts []inventory.Host, rec record.Sweep) (int, error) {
	first := o.Run.Job
	first.Name = rec.Trials[0].ID
	first.Command = sweep.Command(rec.Command, rec.Trials[0].Params)
	req, err := first.request(hosts, "run", nil)
	if err != nil {
		plain := first
		plain.Command = []string{"true"}
		if _, perr := plain.request(hosts, "run", nil); perr != nil {
			return 0, err // the run flags': every trial's
		}
		return 0, trialErr(rec, 0, err)
	}
	for i, t := range rec.Trials[1:] {
		r := req
		r.RunID, r.Command = t.ID, sweep.Command(rec.Command, t.Params)
		if err := r.Validate(); err != nil {
			return 0, trialErr(rec, i+1, err)
		}
	}
	trialGPUs := 0
	for _, n := range req.Shape() {
		trialGPUs += n
	}
	return trialGPUs, nil
}

// trialErr is err, trial i's command's, naming the trial and its
// parameters.
func trialErr(rec record.Sweep, i int, err error) error {
	var ps []string
	for _, p := range rec.Params {
		ps = append(ps, p.Name+"="+rec.Trials[i].Params[p.Name])
	}
	return fmt.Errorf("trial %s (%s): %w", rec.Trials[i].ID, strings.Join(ps, ", "), err)
}

// validate checks the sweep's own flags and what Run would refuse of the
// run flags (every trial would), before any host is touched, and expands
// the sweep into its record.
func (o *SweepOptions) validate(kept bool) (record.Sweep, error) {
	r := o.Run
	switch {
	case r.LogDir != "":
		return record.Sweep{}, &UsageError{Msg: "--log-dir is for run: a sweep's trials are in tfhive-runs/SWEEP-NNN", Fix: "choose the sweep's name with --name"}
	case len(r.Notify) > 0:
		// A message per trial would drown the channel; a sweep's own
		// end is not told yet.
		return record.Sweep{}, &UsageError{Msg: "--notify is for run: a sweep's trials do not notify", Fix: "tfhive wait SWEEP && your-command tells you when it ends"}
	case o.MaxParallel < 0 || o.MaxFailures < 0 || o.Random < 0:
		return record.Sweep{}, usagef("--max-parallel, --max-failures and --random must not be negative")
	case o.Seed != 0 && o.Random == 0:
		return record.Sweep{}, &UsageError{Msg: "--seed is for --random", Fix: "add --random N to pick N trials of the grid"}
	case r.JSON && o.CSV:
		return record.Sweep{}, usagef("--json and --csv: give one")
	case o.Sort != "" && !launcher.ValidCaptureName(o.Sort):
		return record.Sweep{}, &UsageError{Msg: fmt.Sprintf("--sort %q: not a metric name", o.Sort), Fix: "--sort takes a NAME given to --capture NAME=REGEX"}
	case len(r.Job.Command) == 0:
		return record.Sweep{}, &UsageError{Msg: "no command to sweep", Fix: "give it after --, with {NAME} where a parameter's value goes"}
	}
	if err := r.checkLinkFlags(false); err != nil {
		return record.Sweep{}, err
	}
	if _, err := r.checkTimesAndImports(); err != nil {
		return record.Sweep{}, err
	}
	if err := r.Job.checkCounts(); err != nil {
		return record.Sweep{}, err
	}
	if _, err := captures(r.Capture, r.CaptureFrom, r.Job.taskIDs()); err != nil {
		return record.Sweep{}, err
	}
	if _, err := restartPolicy(r.Restarts, r.RestartOn, r.RestartBackoff); err != nil {
		return record.Sweep{}, err
	}
	if _, err := parseEnv(r.Env); err != nil {
		return record.Sweep{}, err
	}
	var params []record.SweepParam
	for _, s := range o.Params {
		p, err := sweep.ParseParam(s)
		if err != nil {
			return record.Sweep{}, &UsageError{Msg: err.Error()}
		}
		params = append(params, p)
	}
	if err := sweep.Validate(params, o.Random); err != nil {
		return record.Sweep{}, &UsageError{Msg: err.Error()}
	}
	name := r.Job.Name
	switch {
	case kept:
		name = keeper.RunID()
	case name == "":
		name = newRunID(time.Now())
	default:
		if err := checkRunID("--name ", name); err != nil {
			return record.Sweep{}, err
		}
	}
	rec := record.Sweep{Name: name, Command: r.Job.Command, Params: params, Random: o.Random, Seed: o.Seed}
	rec.Trials = sweep.Trials(rec)
	if last := rec.Trials[len(rec.Trials)-1].ID; checkRunID("", last) != nil {
		return record.Sweep{}, &UsageError{Msg: fmt.Sprintf("--name %s: its trials' ids (%s) are not run ids", name, last), Fix: "choose a shorter --name"}
	}
	if !kept {
		for _, p := range sweep.Unused(rec.Command, params) {
			fmt.Fprintf(r.Stderr, "tfhive: warning: the command has no {%s}: its trials have it only as $%s\n", p, p)
		}
	}
	return rec, nil
}

// sweepDiffers names what of rec differs from old, a resumed sweep's
// record, or "".
func sweepDiffers(old, rec record.Sweep) string {
	switch {
	case !slices.Equal(old.Command, rec.Command):
		// The command may span lines: quoted, it is one.
		return fmt.Sprintf("command (%q)", strings.Join(old.Command, " "))
	case !slices.EqualFunc(old.Params, rec.Params, func(a, b record.SweepParam) bool {
		return a.Name == b.Name && slices.Equal(a.Values, b.Values)
	}):
		var ps []string
		for _, p := range old.Params {
			ps = append(ps, "--param "+p.Name+"="+strings.Join(p.Values, ","))
		}
		return fmt.Sprintf("set of parameters (%s)", view.SanitizeCell(strings.Join(ps, " ")))
	case old.Random != rec.Random || old.Seed != rec.Seed:
		return fmt.Sprintf("trials (--random %d --seed %d)", old.Random, old.Seed)
	}
	return ""
}

// detach starts the sweep's keeper, which runs it all.
func (o *SweepOptions) detach(name, dir string) error {
	if err := rundir.Make(dir); err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	code, err := keeper.Spawn(dir, name, os.O_APPEND, nil, o.Run.Stderr)
	if err != nil {
		return err
	}
	if code >= 0 {
		return &ExitError{Code: code}
	}
	if o.Run.JSON {
		fmt.Fprintf(o.Run.Stdout, "{\"sweep\": %q, \"log_dir\": %q}\n", name, dir)
	} else {
		fmt.Fprintln(o.Run.Stdout, name)
	}
	fmt.Fprintf(o.Run.Stderr, "tfhive: sweep %s started, detached; its lines in %s\n", name, filepath.Join(dir, rundir.Console))
	fmt.Fprintf(o.Run.Stderr, "tfhive: hint: tfhive attach %s follows it, tfhive wait %s waits for its end, tfhive kill %s stops it\n", name, name, name)
	return nil
}

// endLine says how a trial ended, for the sweep's line: sum, or why it
// has none.
func endLine(s *record.Summary, err error) string {
	if s == nil {
		msg := "ended without a summary"
		if err != nil {
			msg = "did not start: " + oneLine(err.Error())
		}
		return msg
	}
	line := fmt.Sprintf("%s in %s", s.Result, view.RoundDuration(s.Duration))
	if s.Result != record.ResultSucceeded {
		line += fmt.Sprintf(", exit %d: %s", s.ExitCode, oneLine(s.Reason))
		return line + " (tfhive logs " + s.RunID + ")"
	}
	var ms []string
	for _, k := range sortedMetricKeys(s.Metrics) {
		ms = append(ms, k+"="+s.Metrics[k])
	}
	if len(ms) > 0 {
		line += " (" + strings.Join(ms, " ") + ")"
	}
	return line
}

// run runs the sweep's trials (sweepjob.Run) and prints its table;
// adoptOnly: attach SWEEP -H, which adopts the trials still under way and
// starts none.
func (o *SweepOptions) run(ctx context.Context, rec record.Sweep, trialGPUs int, tree *codesync.Tree, adoptOnly bool) error {
	hosts, opts, err := fleetOptions(o.Run.Hosts, io.Discard, probeGPUs)
	if err != nil {
		return err
	}
	r := o.Run
	spec := sweepjob.Spec{Record: rec, TrialGPUs: trialGPUs, MaxParallel: o.MaxParallel, MaxFailures: o.MaxFailures,
		AdoptOnly: adoptOnly, Hosts: hosts, Probe: opts, Signals: r.Signals, Say: r.Stderr, Console: true,
		Adopt: launcher.Options{Grace: r.Grace, Reconnect: r.Reconnect, Sample: r.Sample, Parallel: r.Hosts.Parallel, Started: keeper.Started,
			Hang: launcher.Hang{After: r.HangAfter, Stop: r.OnHang == OnHangStop, Native: r.HangNative}}}
	if keeper.Mode() {
		// A keeper's stdout is the console.log, keeper.log is for its
		// errors.
		spec.Say, spec.Console = r.Stdout, false
	}
	err = sweepjob.Run(ctx, spec, sweepjob.Hooks{Probe: job.ProbeAll, Trial: o.trial(tree), EndLine: endLine,
		Captures: func(p *schedule.Plan) (*launcher.Captures, error) {
			return captures(r.Capture, r.CaptureFrom, planTaskIDs(p))
		},
		End: func(console io.Writer, e sweepjob.End) error { return o.end(rec, console, e) }})
	switch {
	case errors.Is(err, sweepjob.ErrRunning):
		return &UsageError{Msg: fmt.Sprintf("sweep %s is running", rec.Name), Fix: "tfhive wait " + rec.Name + " waits for its end"}
	case errors.Is(err, sweepjob.ErrDetached):
		fmt.Fprintf(r.Stderr, "tfhive: detached from sweep %s; its trials go on, kept, until a keeper attaches (tfhive attach %s -H …) or --unattended passes\n", rec.Name, rec.Name)
		if stdoutClosed(ctx) {
			return launcher.ErrStdoutClosed
		}
		return &ExitError{Code: 130}
	}
	return err
}

// trial runs a sweep's trial as `tfhive run --wait` would (without
// --wait it waits its turn until the sweep ends), its console in its log
// dir, over the sweep's shared connections, sharing its probes, placed by
// the sweep's book; its summary is returned, not read back.
func (o *SweepOptions) trial(tree *codesync.Tree) func(context.Context, sweepjob.Trial) (*record.Summary, error) {
	// One git state for all trials: they share the launch dir, and a git
	// per trial is a process each (hundreds in a large sweep).
	launched := startLaunchState()
	return func(ctx context.Context, t sweepjob.Trial) (*record.Summary, error) {
		r := o.Run
		r.Streams = Streams{Stdout: t.Console, Stderr: t.Console, Color: "never"}
		r.Hosts.Dial, r.Hosts.Coalesce = t.Dial, t.Coalesce
		r.Job.Name, r.Job.Command = t.ID, t.Command
		r.Env = append(slices.Clone(o.Run.Env), t.Env...)
		r.Detach, r.JSON, r.Quiet = false, false, false
		r.Signals = t.Signals
		return run(ctx, r, runAs{tree: tree, launched: launched, trial: &trialHooks{started: t.Started, book: t.Book}})
	}
}

// end prints the table (into console.log too), writes the report and
// says how the sweep ended.
func (o *SweepOptions) end(rec record.Sweep, console io.Writer, e sweepjob.End) error {
	tab := logroot.SweepTable(rundir.Root, rec, o.Run.Stderr)
	view.SortSweep(tab.Trials, o.Sort, o.Reverse)
	if err := writeSweepTable(o.Run.Stdout, tab, o.Run.JSON, o.CSV); err != nil {
		return err
	}
	if console != nil && !o.Run.JSON && !o.CSV {
		// The table in the console.log too, for logs and attach.
		view.WriteSweep(console, tab)
	}
	writeSweepReport(rundir.Path(rec.Name), o.Run.Stderr)
	if e.Interrupted {
		return context.Canceled
	}
	failed := 0
	for _, r := range tab.Trials {
		if r.Result != record.ResultSucceeded {
			failed++
		}
	}
	if failed > 0 {
		return &SweepFailedError{Name: rec.Name, Failed: failed, Total: len(tab.Trials), Stopped: e.Stopped}
	}
	return nil
}

// adoptSweep is tfhive attach SWEEP -H …: the sweep's tfhive is gone;
// this one adopts its trials still under way on the hosts and follows
// them to their ends (--hang-after watching each, as attach RUN -H's),
// and records those that ended unwatched, in the
// foreground, then prints the sweep's table. It starts no trial: the
// sweep's own command does (it has the trials' flags). Ctrl-C only
// detaches: the trials go on, kept, as after the keeper's end.
func adoptSweep(ctx context.Context, o FollowOptions, rec record.Sweep) error {
	if rundir.GoesOn(rundir.Path(rec.Name)) {
		return &UsageError{Msg: fmt.Sprintf("sweep %s is running: its tfhive keeps it", rec.Name), Fix: "tfhive attach " + rec.Name + " (without -H) follows it"}
	}
	var so SweepOptions
	so.Run.Streams = o.Streams
	so.Run.Hosts = o.Hosts
	so.Run.Grace, so.Run.Reconnect = o.Grace, o.Reconnect
	so.Run.Capture, so.Run.CaptureFrom = o.Capture, o.CaptureFrom
	if _, err := captures(o.Capture, o.CaptureFrom, nil); err != nil {
		return err
	}
	// Each trial adopted is watched as attach RUN -H watches its run.
	so.Run.HangAfter, so.Run.OnHang, so.Run.HangNative = o.HangAfter, o.OnHang, o.HangNative
	if err := so.Run.checkHangFlags(); err != nil {
		return err
	}
	return so.run(ctx, rec, 0, nil, true)
}
