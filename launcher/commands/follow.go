package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"

	"github.com/tfhive/tfhive/launcher/view"
)

// FollowOptions are `tfhive wait`'s, `attach`'s and `logs`'.
type FollowOptions struct {
	Streams
	RunID  string
	LogDir string // --log-dir: the run's log dir, if not tfhive-runs/RUN_ID
	Task   string // logs --task: one task's log (worker:1)
	Follow bool   // logs -f
	Since  int64  // attach --since: the console's byte to start at
	// Adopt (attach with -H or --hosts): find the run on the hosts and
	// become its keeper (adopt.go), with these hosts, --grace and
	// --reconnect.
	Adopt bool
	// FromHosts (logs with -H or --hosts): read the task output from the
	// hosts' run directories (hostlogs.go), with these hosts.
	FromHosts bool
	Hosts     HostOptions
	Grace     time.Duration
	Reconnect time.Duration
	// Capture and CaptureFrom are --capture's, for the adopted run's
	// summary (see RunOptions).
	Capture     []string
	CaptureFrom string
	// HangAfter, OnHang and HangNative are --hang-after's, for the
	// adopted run from then on (see RunOptions).
	HangAfter  time.Duration
	OnHang     string
	HangNative bool
	// Notify is attach -H's --notify (see RunOptions): whom the adopted
	// run's end is told.
	Notify []string
}

// NoRunError: no trace of the run where tfhive looked.
type NoRunError struct{ Msg, Fix string }

func (e *NoRunError) Error() string { return e.Msg }

// Hint is said after the error, when there is one.
func (e *NoRunError) Hint() string { return e.Fix }

// pickRun gives o a run id when the command line named none: the base
// name of --log-dir, or else the latest run of the log root, which it
// names on stderr ("tfhive: logs of RUN (the latest)") so that a script
// knows which run it read. With -H or --hosts the run is the hosts', and
// must be named.
func pickRun(o *FollowOptions, what string) error {
	switch {
	case o.RunID != "":
		return nil
	case o.Adopt || o.FromHosts:
		return &UsageError{Msg: "with -H or --hosts (or $TFHIVE_HOSTS), give the run id", Fix: "the run is the hosts': tfhive ps lists the runs holding GPUs there"}
	case o.LogDir != "":
		o.RunID = filepath.Base(filepath.Clean(o.LogDir))
		return nil
	}
	id, err := LatestRun(rundir.Root, o.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "tfhive: %s %s (the latest)\n", what, id)
	o.RunID = id
	return nil
}

// LatestRun is the id of root's latest run: the last that `tfhive runs`
// lists, by the start its summary records (a run without one, by when
// its plan was written, or its tfhive took the lock), then by id. A run
// dir's own mtime, which anything touching it moves, plays no part.
func LatestRun(root string, stderr io.Writer) (string, error) {
	rs, err := logroot.Runs(root, stderr, time.Now())
	if err != nil {
		return "", err
	}
	if len(rs) == 0 {
		return "", &NoRunError{Msg: fmt.Sprintf("no run in %s here to take as the latest", root),
			Fix: "give a run id (tfhive ps lists the runs holding GPUs), or --log-dir"}
	}
	view.SortRunRecords(rs, "", false)
	return rs[len(rs)-1].RunID, nil
}

// runLogDir finds the run's log dir.
func runLogDir(o FollowOptions) (string, error) {
	dir := o.LogDir
	if dir == "" {
		if err := checkRunID("", o.RunID); err != nil {
			return "", err
		}
		dir = rundir.Path(o.RunID)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		where := "in " + rundir.Root + " here"
		// A run started in another directory (a colleague's, yours
		// elsewhere) has its log dir there: ps lists it all the same.
		fix := fmt.Sprintf("a run's log dir is where it was started (tfhive-runs/%s there, or its --log-dir): "+
			"go there or give --log-dir DIR; or read it from its hosts: tfhive logs -H HOSTS %s (attach -H to follow it)", o.RunID, o.RunID)
		if o.LogDir != "" {
			where, fix = "in "+o.LogDir, ""
		}
		return "", &NoRunError{Msg: fmt.Sprintf("no run %s %s", o.RunID, where), Fix: fix}
	}
	return dir, nil
}

// runResult is the run's end as its summary says: nil for a success.
func runResult(dir, id string) error {
	if rec, ok, err := logroot.Sweep(dir); err != nil || ok {
		// A sweep's end is its trials'.
		if err != nil {
			return err
		}
		return sweepResult(rec)
	}
	data, err := os.ReadFile(filepath.Join(dir, rundir.Summary))
	if err != nil {
		return fmt.Errorf("run %s ended without a summary (see %s)", id, filepath.Join(dir, rundir.KeeperLog))
	}
	var s record.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("run %s: %s: %w", id, filepath.Join(dir, rundir.Summary), err)
	}
	if s.ExitCode != 0 {
		return &RunFailedError{Summary: &s}
	}
	return nil
}

// Wait blocks until the run ends and returns its result: the run's own
// exit code, for scripts that start runs with --detach.
func Wait(ctx context.Context, o FollowOptions) error {
	if err := pickRun(&o, "waiting for"); err != nil {
		return err
	}
	dir, err := runLogDir(o)
	if err != nil {
		return err
	}
	if err := rundir.WaitEnd(ctx, dir); err != nil {
		return err
	}
	return runResult(dir, o.RunID)
}

// Attach follows a detached run's console from the start (or --since),
// then live, and returns the run's result once it ends. Ctrl-C (ctx)
// only detaches: the run goes on.
func Attach(ctx context.Context, o FollowOptions) error {
	if len(o.Notify) > 0 && !o.Adopt {
		// Following a console here tells nobody: the keeper does.
		return &UsageError{Msg: "--notify is for attach -H (adopting a run whose keeper is gone)", Fix: "the run's keeper tells its --notify targets"}
	}
	if err := pickRun(&o, "attaching to"); err != nil {
		return err
	}
	if o.Adopt {
		if o.LogDir == "" && checkRunID("", o.RunID) == nil {
			// A sweep of this log root: its trials are adopted.
			rec, ok, err := logroot.Sweep(rundir.Path(o.RunID))
			if err != nil {
				return err
			}
			if ok {
				if len(o.Notify) > 0 {
					return &UsageError{Msg: "--notify is for a run: a sweep's trials do not notify", Fix: "tfhive wait SWEEP && your-command tells you when it ends"}
				}
				if _, err := os.Stat(filepath.Join(rundir.Path(o.RunID), rundir.SlurmJob)); err == nil {
					return &UsageError{Msg: fmt.Sprintf("sweep %s is a Slurm job array: attach -H does not follow one again yet", o.RunID),
						Fix: "its array goes on without tfhive: tfhive queue --on slurm shows it, tfhive kill " + o.RunID + " cancels it"}
				}
				return adoptSweep(ctx, o, rec)
			}
		}
		if handled, err := adoptSlurm(ctx, o); handled {
			return err
		}
		return adopt(ctx, o)
	}
	if len(o.Capture) > 0 || o.CaptureFrom != "" {
		return &UsageError{Msg: "--capture is for attach -H or --hosts, which keeps the run", Fix: "give --capture to tfhive run: its own tfhive captures"}
	}
	if o.HangAfter != 0 || o.HangNative || o.OnHang == OnHangStop {
		return &UsageError{Msg: "--hang-after is for attach -H or --hosts, which keeps the run", Fix: "give --hang-after to tfhive run: its own tfhive watches"}
	}
	dir, err := runLogDir(o)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, rundir.Console)
	if _, err := os.Stat(path); err != nil {
		return &NoRunError{Msg: fmt.Sprintf("run %s kept no console (no console.log: started by an older tfhive): its console was the terminal that started it", o.RunID)}
	}
	if err := follow(ctx, o.Stdout, path, o.Since, dir, true); err != nil {
		// Its reader gone, a follower has nothing to say: the run never
		// depended on it.
		if stdoutClosed(ctx) {
			return launcher.ErrStdoutClosed
		}
		if ctx.Err() != nil {
			fmt.Fprintf(o.Stderr, "tfhive: detached from run %s; it goes on (tfhive attach %s)\n", o.RunID, o.RunID)
			return &ExitError{Code: 130}
		}
		return err
	}
	return runResult(dir, o.RunID)
}

// Logs prints a run's console (a detached run's) or one task's log, and
// with -f follows it until the run ends; with -H or --hosts, from the
// hosts.
func Logs(ctx context.Context, o FollowOptions) error {
	if err := pickRun(&o, "logs of"); err != nil {
		return err
	}
	if o.FromHosts {
		return hostLogs(ctx, o)
	}
	dir, err := runLogDir(o)
	if err != nil {
		return err
	}
	name := rundir.Console
	if o.Task != "" {
		role, index, ok := strings.Cut(o.Task, ":")
		if !ok || role == "" || strings.ContainsAny(o.Task, "/\x00") {
			return usagef("--task %q: want ROLE:INDEX, as worker:1", o.Task)
		}
		name = rundir.TaskLog(role, index)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		if o.Task != "" {
			return &NoRunError{Msg: fmt.Sprintf("run %s has no task %s (no %s)", o.RunID, o.Task, path)}
		}
		return &NoRunError{Msg: fmt.Sprintf("run %s kept no console (no console.log: started by an older tfhive): give --task ROLE:INDEX for a task's log", o.RunID)}
	}
	return follow(ctx, o.Stdout, path, 0, dir, o.Follow)
}

// follow copies path from offset to w, then, while the run goes on and
// live is set, what is added to it (rundir.Follow); on a terminal,
// sanitised.
func follow(ctx context.Context, w io.Writer, path string, offset int64, dir string, live bool) error {
	if isTerminal(w) {
		rw := view.NewReplayWriter(w)
		defer rw.Close()
		w = rw
	}
	return rundir.Follow(ctx, w, path, offset, dir, live)
}
