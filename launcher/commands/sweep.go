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
	"sync"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
)

// `tfhive sweep` runs one command over a grid of parameters: each trial a
// run of its own (tfhive-runs/NAME-NNN), run in this process as `tfhive
// run --wait` runs, so that it waits its turn in the hosts' queue with a
// ticket like any other run. At most --max-parallel trials are under way
// at once (by default as many as the fleet's GPUs fit): a trial enters the
// queue only when one ends, so a sweep never holds more places in it than
// it can use, and a colleague who queued first starts first. All trials
// share one connection per host (probe.Shared) and one placement book
// (sweep.Book): a trial plans on its own probe, keeping off the GPUs its
// siblings have planned, so trials started together do not all race for
// the same first free GPU. Each trial's console (its
// tasks' output, its summary) goes to console.log in its log dir, where
// `tfhive logs TRIAL` reads it; the sweep says on stderr when each trial
// starts and ends, then prints the table of results on stdout.

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
	// adoptOnly: tfhive attach SWEEP -H adopts the trials still under
	// way and starts none (sweepadopt.go).
	adoptOnly bool
}

// sweepStopPoll is how often a sweep looks for `tfhive kill`'s stop file.
const sweepStopPoll = 200 * time.Millisecond

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

// trialHooks is what a sweep learns from one of its trials' Run.
type trialHooks struct {
	started func() // every task started
	// book keeps the sweep's trials off each other's GPUs (sweep.Book).
	book *sweep.Book
}

// Sweep runs the sweep, or, with --detach, starts a keeper that does.
func Sweep(ctx context.Context, o SweepOptions) error {
	keeper := keeperMode()
	rec, err := o.validate(keeper)
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
	old, resumed, err := readSweep(dir)
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
	} else if !keeper {
		if err := checkLogDir(dir, false); err != nil {
			return err
		}
	}
	results := trialResults(rec)
	if !keeper {
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
	if o.Run.Detach && !keeper {
		return o.detach(rec.Name, dir)
	}
	// The --sync tree is listed and hashed once for every trial: each
	// trial's run takes it as it is now.
	tree, err := o.Run.Job.prepareSync("", o.Run.Stderr)
	if err != nil {
		return err
	}
	return o.run(ctx, rec, dir, results, trialGPUs, tree)
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
func (o *SweepOptions) validate(keeper bool) (record.Sweep, error) {
	r := o.Run
	switch {
	case r.LogDir != "":
		return record.Sweep{}, &UsageError{Msg: "--log-dir is for run: a sweep's trials are in tfhive-runs/SWEEP-NNN", Fix: "choose the sweep's name with --name"}
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
	case keeper:
		name = os.Getenv(keeperRunEnv)
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
	if !keeper {
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
	code, err := spawnKeeper(dir, name, os.O_APPEND, o.Run.Stderr)
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

// endLine says how a trial ended, for the sweep's line.
func endLine(e trialEnd) string {
	if e.sum == nil {
		msg := "ended without a summary"
		if e.err != nil {
			msg = "did not start: " + oneLine(e.err.Error())
		}
		return msg
	}
	s := e.sum
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

// paramsLine is a trial's parameters, NAME=VALUE in --param order.
func paramsLine(rec record.Sweep, t record.SweepTrial) string {
	var ps []string
	for _, p := range rec.Params {
		ps = append(ps, p.Name+"="+t.Params[p.Name])
	}
	return strings.Join(ps, " ")
}

// setAside moves the log dirs of the trials to run again, a resumed
// sweep's failed ones, to the sweep's earlier/ (TRIAL.1, TRIAL.2, …):
// their logs stay, and each trial runs in a fresh log dir of its id.
func setAside(rec record.Sweep, todo []int) error {
	for _, i := range todo {
		id := rec.Trials[i].ID
		tdir := rundir.Path(id)
		if _, err := os.Lstat(tdir); errors.Is(err, os.ErrNotExist) {
			continue
		}
		earlier := filepath.Join(rundir.Root, rec.Name, rundir.SweepEarlier)
		if err := rundir.Make(earlier); err != nil {
			return fmt.Errorf("log dir: %w", err)
		}
		for n := 1; ; n++ {
			to := filepath.Join(earlier, fmt.Sprintf("%s.%d", id, n))
			if _, err := os.Lstat(to); err == nil {
				continue
			}
			if err := os.Rename(tdir, to); err != nil {
				return fmt.Errorf("setting aside trial %s's earlier log dir: %v", id, pathErr(err))
			}
			break
		}
	}
	return nil
}

// stopAsked: `tfhive kill SWEEP` left its word in the sweep's dir.
func stopAsked(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, rundir.SweepStop))
	return err == nil
}

// serialWriter serialises the writes of many trials' goroutines.
type serialWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *serialWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
