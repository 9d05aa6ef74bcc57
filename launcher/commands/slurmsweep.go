package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/slurmrun"
	"github.com/tfhive/tfhive/launcher/sweepjob"
)

// slurmSweep is `tfhive sweep --on slurm`: the sweep is one job array,
// one array task per trial (plan --emit slurm --param's), at most
// --max-parallel at once (--array's %K); each trial is recorded as a run
// of its own (tfhive-runs/TRIAL) from its array task's output and
// record, and the sweep's table is filled from them as a sweep on hosts
// fills it.
func slurmSweep(ctx context.Context, o SweepOptions) error {
	r := o.Run
	if err := checkOnSlurm(r.Slurm); err != nil {
		return err
	}
	if err := checkSlurmFlags(r.Slurm.Given); err != nil {
		return err
	}
	// --detach: a keeper (this tfhive again, launcher/keeper) submits the
	// array and follows it, its console in the sweep's console.log, as a
	// sweep on hosts' keeper does: attach, wait, logs and kill take the
	// sweep's name. The first tfhive chose the name.
	kept := keeper.Mode()
	rec, err := o.validate(kept)
	if err != nil {
		return err
	}
	dir := rundir.Path(rec.Name)
	if _, resumed, err := logroot.Sweep(dir); err != nil {
		return err
	} else if resumed {
		return &UsageError{Msg: fmt.Sprintf("sweep %s has run already", rec.Name), Fix: "choose another --name: a sweep on Slurm is not resumed yet"}
	}
	dirs := trialDirs(rec)
	if !kept { // the keeper's dir is the first tfhive's
		dirs = append([]string{dir}, dirs...)
	}
	for _, d := range dirs {
		if err := checkLogDir(d, false); err != nil {
			return err
		}
	}
	_, script, tasks, err := r.slurmJob(&rec, o.MaxParallel)
	if err != nil {
		return err
	}
	if r.Detach && !kept {
		err := o.detach(rec.Name, dir)
		if _, serr := os.Stat(filepath.Join(dir, rundir.Sweep)); err != nil && errors.Is(serr, fs.ErrNotExist) {
			os.RemoveAll(dir) // nothing was submitted: no log dir is left behind
		}
		return err
	}
	ex, login, err := dialLogin(ctx, r.Hosts, r.Slurm.Login, r.Stderr)
	if err != nil {
		return err
	}
	defer ex.Close()
	for _, d := range append([]string{dir}, trialDirs(rec)...) {
		if err := rundir.Make(d); err != nil {
			return fmt.Errorf("log dir: %w", err)
		}
	}
	release, err := rundir.HoldLock(dir)
	if err != nil {
		return err
	}
	defer release()
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.Sweep), rec); err != nil {
		return fmt.Errorf("log dir: %w", rundir.PathErr(err))
	}
	started := time.Now()
	sj, err := slurmrun.Submit(ctx, ex, slurmrun.Submission{RunID: rec.Name, Login: login, Script: script,
		Dir: filepath.Join("tfhive-slurm", rec.Name), Partition: r.Slurm.Partition, Account: r.Slurm.Account, Time: r.Slurm.Time,
		Array: len(rec.Trials)})
	if err != nil {
		// Nothing was submitted: the same command may be given again.
		for _, d := range trialDirs(rec) {
			os.RemoveAll(d)
		}
		os.Remove(filepath.Join(dir, rundir.Sweep))
		if !kept {
			os.RemoveAll(dir)
		}
		return err
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SlurmJob), sj); err != nil {
		fmt.Fprintf(r.Stderr, "tfhive: warning: %s: %v\n", filepath.Join(dir, rundir.SlurmJob), rundir.PathErr(err))
	}
	// A keeper's stdout is console.log already: the sweep's own lines go
	// there, for attach and logs, as a keeper on hosts says them.
	out, say := r.Stdout, r.Stderr
	var conlog io.Writer
	if kept {
		say = r.Stdout
	} else {
		f, err := os.OpenFile(filepath.Join(dir, rundir.Console), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("log dir: %w", rundir.PathErr(err))
		}
		defer f.Close()
		conlog = f
		if r.JSON || o.CSV {
			out = r.Stderr
		}
		out, say = multi(out, f), multi(say, f)
	}
	fmt.Fprintf(say, "tfhive: sweep %s is Slurm job array %s (%d trials) on %s; logs in %s\n", rec.Name, sj.JobID, len(rec.Trials), login, dir)
	// The array is Slurm's from here: the first tfhive may go.
	keeper.Started()
	var trials []slurmrun.Trial
	for _, t := range rec.Trials {
		trials = append(trials, slurmrun.Trial{ID: t.ID, LogDir: rundir.Path(t.ID)})
	}
	ends, err := slurmrun.WatchArray(ctx, ex, slurmrun.Follow{Job: sj, Tasks: tasks, Console: out, Quiet: r.Quiet,
		Grace: r.Grace, Stderr: r.Stderr, Interrupt: func() int {
			if r.Signals != nil && r.Signals.Last() == syscall.SIGTERM {
				return 143
			}
			return 130
		}}, trials)
	if err != nil {
		return err
	}
	interrupted := false
	for k, t := range rec.Trials {
		e := ends[k]
		tj := sj
		tj.JobID, tj.Output, tj.Array = sj.JobID+"_"+strconv.Itoa(k), fmt.Sprintf("%s/job-%s_%d.out", sj.Dir, sj.JobID, k), 0
		tj.State, tj.ExitCode = e.Acct.State, e.Acct.ExitCode
		sum := &record.Summary{RunID: t.ID, Result: e.Ended.Result, ExitCode: e.Ended.ExitCode, Reason: e.Ended.Reason,
			LogDir: rundir.Path(t.ID), Started: started, Duration: time.Since(started), Command: rec.Command, Tasks: e.Tasks, Slurm: &tj}
		if err := rundir.WriteJSON(filepath.Join(sum.LogDir, rundir.Summary), sum); err != nil {
			fmt.Fprintf(r.Stderr, "tfhive: error: %v\n", &record.RecordError{Result: sum.Result, Err: err})
		}
		fmt.Fprintf(say, "tfhive: trial %s %s\n", t.ID, endLine(sum, nil))
		interrupted = interrupted || e.Ended.Result == record.ResultInterrupted
	}
	return o.end(rec, conlog, sweepjob.End{Interrupted: interrupted})
}

func trialDirs(rec record.Sweep) []string {
	var ds []string
	for _, t := range rec.Trials {
		ds = append(ds, rundir.Path(t.ID))
	}
	return ds
}

func multi(a, b io.Writer) io.Writer { return io.MultiWriter(a, b) }
