package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/notify"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/slurmrun"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/localfile"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/transport"
	"github.com/tfhive/tfhive/schedule"
)

// OnSlurm is --on's one value: the job runs on a Slurm cluster.
const OnSlurm = "slurm"

// SlurmOptions are run's flags for --on slurm.
type SlurmOptions struct {
	On    string // --on: "" (the hosts) or slurm
	Login string // --login: the login node, a host of the hosts file or -H
	// Partition, Account and Time are sbatch's --partition, --account and
	// --time, as given ("": the cluster's defaults).
	Partition, Account, Time string
	// Nodes and GPUsPerNode shape the job, as plan --emit slurm's.
	Nodes, GPUsPerNode int
	// Given names the run flags given on the command line, without
	// dashes: those without a meaning on Slurm are refused.
	Given []string `json:"-"`
}

// slurmRefused are run's flags that a job on Slurm cannot honour, and why.
var slurmRefused = map[string]string{
	"sync": "put the code on the cluster's shared filesystem", "sync-exclude": "put the code on the cluster's shared filesystem",
	"wait": "Slurm queues the job itself", "priority": "Slurm orders its own queue (--qos, --priority of sbatch)",
	"check": "run tfhive doctor -H LOGIN, or check in the job's --setup", "import": "run tfhive doctor -H LOGIN",
	"restarts": "use sbatch's --requeue", "restart-on": "use sbatch's --requeue", "restart-backoff": "use sbatch's --requeue",
	"capture": "not yet on Slurm", "capture-from": "not yet on Slurm",
	"exclude": "Slurm decides which GPUs are free", "max-util": "Slurm decides which GPUs are free", "max-mem": "Slurm decides which GPUs are free",
	"nic": "use --env NCCL_SOCKET_IFNAME=NAME", "reconnect": "the job runs on whatever happens to the connection",
	"unattended": "the job runs on whatever happens to the connection",
	"sample":     "Slurm's own accounting (sacct, sstat) tells the job's use",
}

// slurmFlags are the flags --on slurm takes: the job's shape and
// command, what the batch script carries, the console's, the login
// node's SSH, sbatch's own, a sweep's. Any other is refused, with
// slurmRefused's reason where it has one: a flag added to run later is
// refused here until it is made to mean something on Slurm.
var slurmFlags = map[string]bool{
	"workers": true, "ps": true, "chief": true, "evaluator": true, "gpus-per-worker": true, "gpus-per-ps": true,
	"framework": true, "tf-flags": true, "name": true, "strategy": true, "port-range": true, "nnodes": true, "nproc-per-node": true,
	"env": true, "workdir": true, "setup": true, "log-dir": true, "grace": true, "timeout": true, "detach": true,
	"quiet": true, "json": true, "color": true, "notify": true,
	"host": true, "hosts": true, "hostfile": true, "ssh-config": true, "accept-new-host-keys": true,
	"connect-timeout": true, "command-timeout": true, "parallel": true,
	"on": true, "login": true, "partition": true, "account": true, "time": true, "nodes": true, "gpus-per-node": true,
	"param": true, "random": true, "seed": true, "max-parallel": true, "sort": true, "reverse": true, "csv": true,
}

func checkSlurmFlags(given []string) error {
	for _, f := range given {
		if slurmFlags[f] {
			continue
		}
		why, ok := slurmRefused[f]
		if !ok {
			why = "not yet on Slurm"
		}
		return &UsageError{Msg: fmt.Sprintf("--%s has no meaning with --on slurm", f), Fix: why}
	}
	return nil
}

// runOnSlurm is `tfhive run --on slurm`: the job that plan --emit slurm
// prints, submitted on the login node and followed there until it ends,
// with the summary and exit code of a run on hosts.
func runOnSlurm(ctx context.Context, o RunOptions) error {
	s := o.Slurm
	if s.On != OnSlurm {
		return &UsageError{Msg: fmt.Sprintf("--on %q: the one place a run goes besides the hosts is slurm", s.On), Fix: "--on slurm --login HOST"}
	}
	if err := checkSlurmFlags(s.Given); err != nil {
		return err
	}
	if o.Job.Name != "" {
		if err := checkRunID("--name ", o.Job.Name); err != nil {
			return err
		}
	}
	// --detach: a keeper (this tfhive again, launcher/keeper) submits and
	// follows the job, writing its console and summary into the log dir
	// as a detached run's keeper does: attach, wait and logs read them.
	// The first tfhive chose the run id (the script's too).
	kept := keeper.Mode()
	if kept {
		o.Job.Name = keeper.RunID()
	}
	req, script, tasks, err := o.slurmJob(nil, 0)
	if err != nil {
		return err
	}
	// --notify, or the hosts file's notify:, is told the run's end as for
	// a run on hosts (the keeper's, under --detach).
	targets, err := notifyTargets(o.Notify, o.Hosts, o.Stderr)
	if err != nil {
		return err
	}
	j := o.Job
	if o.Detach && !kept {
		return detach(o)
	}
	id := req.RunID
	dir := o.runLogDir(id)
	if kept {
		id, dir = keeper.RunID(), keeper.LogDir()
	} else if err := checkLogDir(dir, o.LogDir != ""); err != nil {
		return err
	}
	ex, login, err := dialLogin(ctx, o.Hosts, s.Login, o.Stderr)
	if err != nil {
		return err
	}
	defer ex.Close()
	if !kept {
		if err := rundir.Make(dir); err != nil {
			return fmt.Errorf("log dir: %w", err)
		}
	}
	release, err := rundir.HoldLock(dir)
	if err != nil {
		return err
	}
	defer release()
	started := time.Now()
	sj, err := slurmrun.Submit(ctx, ex, slurmrun.Submission{RunID: id, Login: login, Script: script,
		Dir: slurmrun.RemoteDir(id), Partition: s.Partition, Account: s.Account, Time: s.Time})
	if err != nil {
		if !kept {
			os.RemoveAll(dir)
		}
		return err
	}
	sj.Tasks, sj.Submitted = tasks, started
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SlurmJob), sj); err != nil {
		fmt.Fprintf(o.Stderr, "tfhive: warning: %s: %v\n", filepath.Join(dir, rundir.SlurmJob), rundir.PathErr(err))
	}
	fmt.Fprintf(o.Stderr, "tfhive: run %s is Slurm job %s on %s; its output: %s there; logs in %s\n", id, sj.JobID, login, sj.Output, dir)
	// The job is Slurm's from here: the first tfhive may go.
	keeper.Started()
	out := o.Stdout
	if o.JSON {
		out = o.Stderr
	}
	// A keeper's stdout is console.log already.
	var conlog io.Writer = io.Discard
	console := out
	if !kept {
		f, err := os.OpenFile(filepath.Join(dir, rundir.Console), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("log dir: %w", rundir.PathErr(err))
		}
		defer f.Close()
		conlog, console = f, io.MultiWriter(out, f)
	}
	results, end, acct, err := slurmrun.Watch(ctx, ex, slurmrun.Follow{RunID: id, Job: sj, Tasks: tasks, LogDir: dir,
		Console: console, Quiet: o.Quiet, Grace: o.Grace, Stderr: o.Stderr,
		Interrupt: func() int {
			if o.Signals != nil && o.Signals.Last() == syscall.SIGTERM {
				return 143
			}
			return 130
		}})
	if err != nil {
		return err
	}
	sj.State, sj.ExitCode, sj.Tasks = acct.State, acct.ExitCode, nil
	sum := &record.Summary{RunID: id, Result: end.Result, ExitCode: end.ExitCode, Reason: end.Reason, LogDir: dir,
		Started: started, Duration: time.Since(started), Command: j.Command, Tasks: results, Slurm: &sj}
	return finishSlurm(ctx, o, sum, conlog, newNotifier(targets, id, dir, o.Stderr))
}

// adoptSlurm is `tfhive attach RUN -H …|--hosts …` for a run --on slurm
// whose tfhive is gone before the job's end (the laptop closed, the link
// lost): this one follows the job again on its login node, from the
// start of its output, and records its end as the run's tfhive would
// have; Ctrl-C cancels the job, as it would have. handled is false when
// RUN is no run --on slurm.
func adoptSlurm(ctx context.Context, o FollowOptions) (handled bool, err error) {
	dir, err := runLogDir(o)
	if err != nil {
		return false, nil
	}
	sj, found, err := readSlurmJob(dir, o.RunID)
	if !found || err == nil && sj.Array > 0 {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.Summary)); err == nil {
		return true, &UsageError{Msg: fmt.Sprintf("run %s has ended (Slurm job %s)", o.RunID, sj.JobID), Fix: "tfhive logs " + o.RunID + " shows its console"}
	}
	if rundir.GoesOn(dir) {
		return true, &UsageError{Msg: fmt.Sprintf("run %s has its tfhive still", o.RunID), Fix: "tfhive attach " + o.RunID + " (without -H) follows it"}
	}
	targets, err := notifyTargets(o.Notify, o.Hosts, o.Stderr)
	if err != nil {
		return true, err
	}
	// The log dir is this tfhive's before the login node is dialled.
	release, err := rundir.HoldLock(dir)
	if err != nil {
		return true, err
	}
	defer release()
	ex, _, err := dialLogin(ctx, o.Hosts, sj.Login, o.Stderr)
	if err != nil {
		return true, err
	}
	defer ex.Close()
	conlog, err := os.OpenFile(filepath.Join(dir, rundir.Console), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return true, fmt.Errorf("log dir: %w", rundir.PathErr(err))
	}
	defer conlog.Close()
	// The job's output again from its start: the tasks' logs too.
	for _, t := range sj.Tasks {
		os.Remove(filepath.Join(dir, rundir.TaskLogOf(t.Role, t.Index)))
	}
	fmt.Fprintf(o.Stderr, "tfhive: following Slurm job %s of run %s on %s again, from its start\n", sj.JobID, o.RunID, sj.Login)
	results, end, acct, err := slurmrun.Watch(ctx, ex, slurmrun.Follow{RunID: o.RunID, Job: sj, Tasks: sj.Tasks, LogDir: dir,
		Console: io.MultiWriter(o.Stdout, conlog), Grace: o.Grace, Stderr: o.Stderr})
	if err != nil {
		return true, err
	}
	started := sj.Submitted
	sj.State, sj.ExitCode, sj.Tasks = acct.State, acct.ExitCode, nil
	sum := &record.Summary{RunID: o.RunID, Result: end.Result, ExitCode: end.ExitCode, Reason: end.Reason, LogDir: dir,
		Started: started, Duration: time.Since(started), Tasks: results, Slurm: &sj}
	return true, finishSlurm(ctx, RunOptions{Streams: o.Streams}, sum, conlog, newNotifier(targets, o.RunID, dir, o.Stderr))
}

// slurmJob is the request and the batch script (with its tasks) that plan
// --emit slurm makes of o; sw makes it a sweep's job array.
func (o RunOptions) slurmJob(sw *record.Sweep, maxParallel int) (schedule.Request, string, []emit.SlurmTask, error) {
	s := o.Slurm
	env, err := parseEnv(o.Env)
	if err != nil {
		return schedule.Request{}, "", nil, err
	}
	lo, hi, err := schedule.ParsePortRange(o.Job.PortRange)
	if err != nil {
		return schedule.Request{}, "", nil, err
	}
	j := o.Job
	req := schedule.Request{Framework: j.Framework, PS: j.PS, Workers: j.Workers, Chief: j.Chief, Evaluator: j.Evaluator,
		GPUsPerWorker: j.GPUsPerWorker, GPUsPerPS: j.GPUsPerPS, Strategy: j.Strategy, PortLo: lo, PortHi: hi,
		Command: j.Command, TFFlags: j.TFFlags, RunID: j.Name, RanksPerHost: j.RanksPerHost}
	if sw != nil {
		req.RunID = sw.Name
	}
	if req.RunID == "" {
		req.RunID = newRunID(time.Now())
	}
	// run's --env K is this machine's value, as on hosts: written into
	// the script, which only the user can read there.
	var envs []string
	for _, k := range sortedEnv(env) {
		envs = append(envs, k+"="+env[k])
	}
	script, tasks, err := emit.SlurmJob(emit.Options{Request: req, NameGiven: j.Name != "", Env: envs, Workdir: o.Workdir,
		Setup: o.Setup, Grace: o.Grace, Timeout: o.Timeout, Nodes: s.Nodes, GPUsPerNode: s.GPUsPerNode,
		Sweep: sw, MaxParallel: maxParallel})
	return req, script, tasks, err
}

// finishSlurm writes the summary and prints it as a run's end does, then
// tells n (--notify's, nil: none) the run's end, as a run on hosts does.
func finishSlurm(ctx context.Context, o RunOptions, sum *record.Summary, conlog io.Writer, n *notify.Notifier) error {
	view.WriteSummary(conlog, sum)
	werr := rundir.WriteJSON(filepath.Join(sum.LogDir, rundir.Summary), sum)
	if o.JSON {
		record.WriteSummaryJSON(o.Stdout, sum)
	} else {
		view.WriteSummary(o.Stdout, sum)
	}
	if werr != nil {
		fmt.Fprintf(o.Stderr, "tfhive: error: %v\n", &record.RecordError{Result: sum.Result, Err: werr})
		if sum.ExitCode == 0 {
			return &ExitError{Code: 1}
		}
	} else {
		writeRunReport(sum.LogDir, sum.RunID, o.Stderr)
	}
	// After the summary and the report: a webhook may take seconds. One
	// tfhive records a job's end (the run's lock): it is told once.
	tellEnd(ctx, n, sum, nil, false, nil)
	if sum.ExitCode != 0 {
		return &RunFailedError{Summary: sum}
	}
	return nil
}

func sortedEnv(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// dialLogin opens the one connection to the login node: --login names a
// host of the hosts file (or of -H), or is one itself; without --login,
// the one host there is.
func dialLogin(ctx context.Context, h HostOptions, login string, stderr io.Writer) (remote.Executor, string, error) {
	hs, opts, err := fleetOptions(h, stderr, probeClaims)
	if err != nil {
		return nil, "", err
	}
	var host *inventory.Host
	for i := range hs {
		if hs[i].Name == login || (login == "" && len(hs) == 1) {
			host = &hs[i]
		}
	}
	if host == nil && login != "" && len(h.Hosts) == 0 {
		h.Hosts = []string{login}
		if hs, opts, err = fleetOptions(h, stderr, probeClaims); err != nil {
			return nil, "", err
		}
		if len(hs) == 1 {
			host = &hs[0]
		}
	}
	if host == nil || host.Local {
		return nil, "", &UsageError{Msg: "--on slurm needs the cluster's login node", Fix: "give --login HOST (a host of the hosts file, or user@host)"}
	}
	if opts.Dial != nil {
		ex, herr := opts.Dial(ctx, *host)
		if herr != nil {
			return nil, "", &UnreachableError{Bad: 1, Total: 1, Lines: []string{herr.Error()}}
		}
		return ex, host.Name, nil
	}
	d := transport.NewDialer(opts.SSH)
	ex, herr := remote.Dial(ctx, d, *host)
	if herr != nil {
		d.Close()
		return nil, "", &UnreachableError{Bad: 1, Total: 1, Lines: []string{herr.Error()}}
	}
	return dialed{ex, d}, host.Name, nil
}

// dialed is the login node's connection, which closes its dialer too
// (a jump host's connection).
type dialed struct {
	remote.Executor
	d *transport.Dialer
}

func (c dialed) Close() error {
	err := c.Executor.Close()
	c.d.Close()
	return err
}

// killSlurm is `tfhive kill RUN` for a run --on slurm of this log root
// that has not ended: scancel on its login node, with the grace
// (slurmrun.Cancel). Its tfhive (or keeper) then records it cancelled.
// handled is false when RUN is no such run.
func killSlurm(ctx context.Context, o KillOptions) (handled bool, err error) {
	dir := rundir.Path(o.RunID)
	sj, found, err := readSlurmJob(dir, o.RunID)
	if !found || err != nil {
		return found, err
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.Summary)); err == nil {
		return true, fmt.Errorf("run %s has ended: Slurm job %s is over", o.RunID, sj.JobID)
	}
	// A sweep's job array has ended once each trial has its summary
	// (its tfhive gone or not: the array may go on without it).
	if rec, ok, err := logroot.Sweep(dir); err == nil && ok && sj.Array > 0 {
		ended := true
		for _, t := range rec.Trials {
			if _, err := os.Stat(filepath.Join(rundir.Path(t.ID), rundir.Summary)); err != nil {
				ended = false
			}
		}
		if ended {
			return true, fmt.Errorf("sweep %s has ended: Slurm job array %s is over", o.RunID, sj.JobID)
		}
	}
	ex, _, err := dialLogin(ctx, o.Hosts, sj.Login, o.Stderr)
	if err != nil {
		return true, err
	}
	defer ex.Close()
	if err := slurmrun.Cancel(ctx, ex, o.RunID, sj.JobID, o.Grace); err != nil {
		return true, fmt.Errorf("%s: scancel %s: %w", sj.Login, sj.JobID, err)
	}
	what := "run"
	if sj.Array > 0 {
		what = "sweep"
	}
	fmt.Fprintf(o.Stdout, "tfhive: cancelled Slurm job %s of %s %s on %s\n", sj.JobID, what, o.RunID, sj.Login)
	return true, nil
}

// slurmJobMax bounds a run's slurm.json (its tasks' placement).
const slurmJobMax = 4 << 20

// readSlurmJob reads the slurm.json of run id's log dir dir; found is
// false when there is none (a run on hosts). Its record says which host
// tfhive dials, which job it cancels or follows and which task logs it
// writes, so it is read as every file tfhive finds by itself: only in a
// log dir nobody else can have made or swapped (rundir.Check), only a
// file nobody but the user or root can have written (localfile.ReadOwned:
// a regular file, bounded, opened without waiting for a FIFO's writer),
// and only a record of run id's own job (slurmrun.CheckJob). Anything
// else is refused in one line, before any host is dialled: in a shared
// directory, another user's tfhive-runs/RUN/slurm.json must not point
// kill or attach at a job or a login node of theirs.
func readSlurmJob(dir, id string) (sj record.SlurmJob, found bool, err error) {
	path := filepath.Join(dir, rundir.SlurmJob)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return sj, false, nil
	}
	refuse := func(why string) (record.SlurmJob, bool, error) {
		return record.SlurmJob{}, true, &UsageError{Msg: fmt.Sprintf("run %s's Slurm job record %s refused: %s", id, path, why),
			Fix: "only a record in a log dir of yours that nobody else can write to is acted on"}
	}
	if err := rundir.Check(dir); err != nil {
		return refuse(err.Error())
	}
	data, err := localfile.ReadOwned(path, slurmJobMax)
	var no *localfile.NotOwnedError
	switch {
	case errors.As(err, &no):
		return refuse(no.Why)
	case err != nil:
		return refuse(localfile.Describe(err).Error())
	}
	if err := json.Unmarshal(data, &sj); err != nil {
		return refuse("it is not a Slurm job's record")
	}
	if err := slurmrun.CheckJob(sj, id); err != nil {
		return refuse(err.Error())
	}
	return sj, true, nil
}
