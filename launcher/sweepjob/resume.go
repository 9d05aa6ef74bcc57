package sweepjob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"golang.org/x/sync/errgroup"
)

// A resumed sweep (the same tfhive sweep command again, or tfhive attach
// SWEEP -H …) first asks the hosts about each trial that was under way
// when the sweep's tfhive went away (a kill -9, a lost laptop): a trial
// whose log dir here has no summary. What the hosts hold of it decides:
//
//   - some task's supervisor still lives: the trial is adopted as tfhive
//     attach -H adopts a run (launcher.AdoptedOptions), its output
//     followed from the first byte to its end, its summary the trial's;
//     it counts among the trials under way (--max-parallel) and is never
//     run again;
//   - every task ended while nobody watched: adopted the same way, which
//     reads each task's output and status from the hosts and ends at
//     once; the summary is the trial's, so a success is kept, never run
//     again, and a failure is run again as any failed trial is;
//   - the hosts hold nothing of it (it never got there): run again.
//
// A trial run again never loses what an earlier attempt left: its log
// dir here goes to the sweep's earlier/ (setAside) and its run directory
// on each host becomes TRIAL.N there (launcher.SetAside), which tfhive
// logs -H reads and tfhive gc removes in time. The host output of a
// trial that is not run again is never touched.

// resumeTrials is what a resumed sweep found of its trials on the hosts.
type resumeTrials struct {
	// running are the trials adopted while their tasks run, with what the
	// hosts said of each.
	running map[int][]launcher.FoundRun
	// todo are the trials to run (again), in order.
	todo []int
}

// probeFleet counts the fleet's GPUs, once, when the sweep runs as many
// trials as fit, and asks the hosts about the trials of a resumed sweep
// over the same probe: which still run, to adopt, and which are to run.
// The first trials plan on that probe too (probe.Coalescer.Seed), where
// each would wait for a probe begun after it asked, and some for the one
// after that. closeFleet closes that probe's fleet at the sweep's end.
func (r *sweepRun) probeFleet(ctx context.Context, todo []int) (resumed resumeTrials, fleetGPUs int, closeFleet func(), err error) {
	s, rec := r.spec, r.rec
	resumed, closeFleet = resumeTrials{todo: todo}, func() {}
	if len(todo) == 0 || !(s.MaxParallel == 0 || s.AdoptOnly || slices.ContainsFunc(todo, func(i int) bool { return hasLogDir(rec.Trials[i].ID) })) {
		return resumed, 0, closeFleet, nil
	}
	f := probe.NewFleet(s.Hosts, r.fleetOpts())
	closeFleet = f.Close
	inv, err := r.hooks.Probe(ctx, f)
	if err != nil {
		return resumed, 0, closeFleet, err
	}
	// The first trials plan on this probe instead of one or two more
	// (Coalescer.Seed), while it is the newest under probe.MaxSeedAge.
	r.probes.Seed(f, inv)
	execs := map[string]remote.Executor{}
	for i, h := range inv.Hosts {
		fleetGPUs += len(h.GPUs)
		if h.Err == nil {
			execs[f.Hosts[i].Name] = f.Executor(i)
		}
	}
	if s.MaxParallel == 0 && fleetGPUs == 0 && s.TrialGPUs > 0 {
		if err := job.Unreachable(inv); err != nil {
			return resumed, fleetGPUs, closeFleet, err
		}
	}
	resumed = r.resume(ctx, todo, execs)
	if s.AdoptOnly {
		resumed.todo = nil
	}
	return resumed, fleetGPUs, closeFleet, nil
}

// resume asks the hosts (execs) about the trials of todo that were under
// way, adopts at once those that ended unwatched (recording their
// results), and sets aside on the hosts what each trial to run again
// left there. AdoptOnly (attach -H): nothing is set aside, nothing will
// run again.
func (r *sweepRun) resume(ctx context.Context, todo []int, execs map[string]remote.Executor) resumeTrials {
	rec, parallel := r.rec, r.spec.Adopt.Parallel
	res := resumeTrials{running: map[int][]launcher.FoundRun{}}
	var mu sync.Mutex
	ended := map[int][]launcher.FoundRun{}
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	for _, i := range todo {
		if !unfinishedHere(rec.Trials[i].ID) {
			continue
		}
		g.Go(func() error {
			id := rec.Trials[i].ID
			found := launcher.FindRun(ctx, execs, id, parallel)
			if _, _, err := launcher.AdoptedPlan(id, found); err != nil {
				return nil // not (wholly) on the hosts: it runs again
			}
			mu.Lock()
			defer mu.Unlock()
			if alive(found) {
				res.running[i] = found
			} else {
				ended[i] = found
			}
			return nil
		})
	}
	g.Wait()
	// The ended ones first, each in its own time: adopting them only
	// reads the hosts' records.
	succeeded := map[int]bool{}
	for _, i := range slices.Sorted(func(yield func(int) bool) {
		for i := range ended {
			if !yield(i) {
				return
			}
		}
	}) {
		t := rec.Trials[i]
		sum, err := r.adoptTrial(ctx, t, ended[i], job.NewSignals(func(error) {}))
		fmt.Fprintf(r.say, "tfhive: trial %s ended while no tfhive kept it; read from its hosts: %s\n", t.ID, r.hooks.EndLine(sum, err))
		succeeded[i] = sum != nil && sum.Result == record.ResultSucceeded
	}
	for _, i := range todo {
		if _, ok := res.running[i]; ok || succeeded[i] {
			continue
		}
		res.todo = append(res.todo, i)
	}
	if r.spec.AdoptOnly {
		return res
	}
	for _, i := range res.todo {
		id := rec.Trials[i].ID
		if _, err := os.Lstat(rundir.Path(id)); err != nil {
			continue // never started: nothing of it on the hosts
		}
		for _, a := range launcher.SetAside(ctx, execs, id, parallel) {
			switch {
			case a.Err != nil:
				fmt.Fprintf(r.say, "tfhive: warning: trial %s: its earlier output on %s: %v\n", id, a.Host, a.Err)
			case a.Running != "":
				fmt.Fprintf(r.say, "tfhive: warning: trial %s: its %s still runs on %s, which holds too little of it to adopt\n", id, a.Running, a.Host)
			case a.Moved != "":
				fmt.Fprintf(r.say, "tfhive: trial %s: its earlier output on %s kept as run %s (tfhive logs -H %s %s)\n", id, a.Host, a.Moved, a.Host, a.Moved)
			}
		}
	}
	return res
}

// unfinishedHere: trial id has a log dir here without a summary: it was
// under way when its sweep's tfhive went away.
func unfinishedHere(id string) bool {
	dir := rundir.Path(id)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return false
	}
	_, err := os.Lstat(filepath.Join(dir, rundir.Summary))
	return errors.Is(err, fs.ErrNotExist)
}

// alive: some host says a task of the run still has its supervisor.
func alive(found []launcher.FoundRun) bool {
	for _, f := range found {
		if f.Err != nil || f.None != "" {
			continue
		}
		for _, state := range f.Tasks {
			if state == "alive" {
				return true
			}
		}
	}
	return false
}

// adoptTrial adopts trial t on its hosts (found: what they hold of it)
// into its log dir here, as the trial's keeper, until its end; it
// returns the trial's summary as a run of the sweep does (trial).
func (r *sweepRun) adoptTrial(ctx context.Context, t record.SweepTrial, found []launcher.FoundRun, sigs *job.Signals) (*record.Summary, error) {
	tdir := rundir.Path(t.ID)
	lo, err := launcher.AdoptedOptions(t.ID, found)
	if err != nil {
		return nil, err
	}
	caps, err := r.hooks.Captures(lo.Plan)
	if err != nil {
		return nil, err
	}
	release, err := rundir.HoldLock(tdir)
	if err != nil {
		return nil, fmt.Errorf("trial %s: %w", t.ID, err)
	}
	defer release()
	console, err := rundir.OpenFile(filepath.Join(tdir, rundir.Console), os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	defer console.Close()
	// A fleet of its own, over the sweep's shared connections, as each
	// trial has: a redial of one trial's host replaces that trial's
	// connection only.
	fleet := probe.NewFleet(r.spec.Hosts, r.fleetOpts())
	defer fleet.Close()
	lo.Hosts, lo.Execs = map[string]inventory.Host{}, map[string]remote.Executor{}
	for _, h := range r.spec.Hosts {
		lo.Hosts[h.Name] = h
	}
	var lost []string
	for _, h := range lo.Plan.Hosts() {
		e, err := fleet.Redial(ctx, h)
		if err != nil {
			lost = append(lost, h+": "+err.Error())
			continue
		}
		lo.Execs[h] = e
	}
	if len(lost) > 0 {
		err := fmt.Errorf("trial %s cannot be adopted: %s", t.ID, strings.Join(lost, "; "))
		fmt.Fprintf(console, "tfhive: error: %v\n", err)
		return nil, err
	}
	w := &serialWriter{w: console}
	a := r.spec.Adopt
	lo.LogDir, lo.Grace, lo.Parallel = tdir, a.Grace, a.Parallel
	lo.KeepAlive, lo.Redial, lo.Captures = fleet.KeepAlive, fleet.Redial, caps
	// Only a run kept across links is adopted (the launcher follows it
	// again from its first byte): with --reconnect 0, the default.
	lo.Reconnect = a.Reconnect
	if lo.Reconnect <= 0 {
		lo.Reconnect = launcher.DefaultReconnect
	}
	if a.Sample > 0 {
		lo.Sample = a.Sample
	}
	lo.Started, lo.Hang = a.Started, a.Hang
	lo.Console = launcher.NewColorConsole(w, false, false)
	_, err = sigs.Start(ctx, lo, nil)
	if cerr := lo.Console.Close(); err == nil {
		err = cerr
	}
	sum, rerr := logroot.TrialSummary(tdir)
	if rerr != nil {
		if err == nil {
			err = rerr
		}
		fmt.Fprintf(w, "tfhive: error: %v\n", err)
		return nil, err
	}
	return sum, nil
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
				return fmt.Errorf("setting aside trial %s's earlier log dir: %v", id, rundir.PathErr(err))
			}
			break
		}
	}
	return nil
}

// hasLogDir: trial id has a log dir here (it started once, at least).
func hasLogDir(id string) bool {
	_, err := os.Lstat(rundir.Path(id))
	return err == nil
}
