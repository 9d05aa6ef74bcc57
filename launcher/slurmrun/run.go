package slurmrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// DefaultPoll is how often the login node looks at the job's state (and
// at its output file where the filesystem gives no inotify, as NFS does
// not): once a second, a squeue each, as `watch squeue` would, which a
// cluster's slurmctld takes from thousands of users; the output itself
// comes as it is written where inotify works.
const DefaultPoll = time.Second

// Submission is what Submit needs besides the connection.
type Submission struct {
	RunID  string
	Login  string // the login node's name, for the record
	Script string // the batch script (emit.SlurmJob)
	// Dir is the run's directory on the login node (relative: under its
	// $HOME), which the compute nodes must see (a shared filesystem): the
	// script and the job's output go there.
	Dir string
	// Workdir is the job's working directory ("": $HOME there).
	Workdir                  string
	Partition, Account, Time string
	// Array is a sweep's number of array tasks; 0: one job.
	Array int
}

// Submit writes the batch script on the login node and submits it.
func Submit(ctx context.Context, ex remote.Executor, s Submission) (record.SlurmJob, error) {
	script := submitSh.With(
		shscript.Set("tfhive_dir", s.Dir), shscript.Set("tfhive_batch", s.Script), shscript.Set("tfhive_workdir", s.Workdir),
		shscript.Set("tfhive_partition", s.Partition), shscript.Set("tfhive_account", s.Account), shscript.Set("tfhive_time", s.Time),
		shscript.Set("tfhive_array", arrayWord(s.Array)))
	// Only cut, not failed past the bound: sbatch may have queued the
	// job, whose id comes first.
	out, errb := limited(), limited()
	rc, err := ex.Run(ctx, "sh -s", strings.NewReader(script), out, errb)
	if err != nil {
		return record.SlurmJob{}, fmt.Errorf("%s: submitting the job: %w", s.Login, err)
	}
	if rc != 0 {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = fmt.Sprintf("exit %d", rc)
		}
		return record.SlurmJob{}, fmt.Errorf("%s: sbatch: %s", s.Login, strings.TrimPrefix(msg, "sbatch: error: "))
	}
	id, dir, ok := parseSubmitted(out.String())
	if !ok {
		return record.SlurmJob{}, fmt.Errorf("%s: sbatch printed no job id: %q", s.Login, cut(out.String(), 200))
	}
	j := record.SlurmJob{JobID: id, Login: s.Login, Dir: dir, Output: dir + "/job-" + id + ".out", Array: s.Array}
	return j, nil
}

func arrayWord(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// parseSubmitted reads submit.sh's "tfhive-slurm-job ID DIR" line.
func parseSubmitted(out string) (id, dir string, ok bool) {
	for line := range strings.Lines(out) {
		rest, found := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "tfhive-slurm-job ")
		if !found {
			continue
		}
		id, dir, ok = strings.Cut(rest, " ")
		if ok && id != "" && strings.Trim(id, "0123456789") == "" {
			return id, dir, true
		}
	}
	return "", "", false
}

// maxOwn bounds what is kept of what a script prints of its own (a job
// id line, a message); the rest is dropped.
const maxOwn = 64 << 10

func limited() *remote.Bounded { return &remote.Bounded{Max: maxOwn} }

// Follow is what Watch needs: the job, its tasks and where its output
// goes.
type Follow struct {
	RunID   string // the run's (a sweep's) id, whose RemoteDir the job's is
	Job     record.SlurmJob
	Tasks   []emit.SlurmTask
	LogDir  string    // the local log dir, for the tasks' logs ("": none)
	Console io.Writer // every line of the job's output, as it comes
	Quiet   bool      // the tasks' lines to their logs only
	Poll    time.Duration
	Grace   time.Duration
	// Interrupt is the exit code of a stop asked for by ctx's end (130
	// for SIGINT, 143 for SIGTERM); called once ctx is done.
	Interrupt func() int
	// Stderr takes tfhive's own lines (the cancel's).
	Stderr io.Writer
}

// Trial is one array task of a sweep's job array: its trial's run id
// and local log dir.
type Trial struct{ ID, LogDir string }

// TrialEnd is how one job (one array task) ended.
type TrialEnd struct {
	Tasks []record.TaskResult
	Ended Ended
	Acct  Accounting
}

// Watch prints the job's output live until the job has ended and returns
// its tasks' fates and how it ended. ctx's end (Ctrl-C) cancels the job
// (Cancel) and Watch goes on until Slurm says it has ended.
func Watch(ctx context.Context, ex remote.Executor, f Follow) ([]record.TaskResult, Ended, Accounting, error) {
	ends, err := watch(ctx, ex, f, []Trial{{LogDir: f.LogDir}})
	if err != nil {
		return nil, Ended{}, Accounting{}, err
	}
	return ends[0].Tasks, ends[0].Ended, ends[0].Acct, nil
}

// WatchArray is Watch for a sweep's job array (f.Job.Array tasks): every
// array task's output live, each line behind its trial's id, and each
// trial's end.
func WatchArray(ctx context.Context, ex remote.Executor, f Follow, trials []Trial) ([]TrialEnd, error) {
	return watch(ctx, ex, f, trials)
}

var taskIDRE = regexp.MustCompile(`^[a-z]{1,32}:[0-9]{1,5}$`)

// maxAccounting bounds the job's record as follow.sh prints it: a job
// array of 10000 trials, five sacct lines each (the array task, its
// batch, extern and two steps), is about 2 MiB.
const maxAccounting = 16 << 20

func watch(ctx context.Context, ex remote.Executor, f Follow, trials []Trial) ([]TrialEnd, error) {
	// Two words of this follow's, made here when it starts and told to
	// follow.sh alone (on its stdin): the mark after the job's output, and
	// the token in the name of every array task's file, which tail -v's
	// headers say. No task knows either, so no line it prints passes for
	// the end of the output or for another file's header.
	mark, tok := "tfhive-slurm-end-"+token(), token()
	poll := f.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	array := f.Job.Array > 0
	sinks := make([]*tasks, len(trials))
	// keys: the job id a task's end (fate) names, each trial's.
	keys := map[string]int{}
	for k, tr := range trials {
		sinks[k] = newTasks(f.Tasks, tr.LogDir, f.Console, f.Quiet)
		if array {
			sinks[k].prefix = "[" + tr.ID + "] "
			keys[f.Job.JobID+"_"+strconv.Itoa(k)] = k
		} else {
			keys[f.Job.JobID] = k
		}
		defer sinks[k].close()
	}
	headerRE := regexp.MustCompile(`^==> .*/` + tok + `/job-` + regexp.QuoteMeta(f.Job.JobID) + `_([0-9]{1,6})\.out <==$`)
	var ids []string
	for _, t := range f.Tasks {
		if taskIDRE.MatchString(t.ID) {
			ids = append(ids, t.ID)
		}
	}
	var acct bytes.Buffer
	// blank is an empty line held back until the next says whose it is:
	// follow.sh's own before its mark (which it prints on a line of its
	// own, after a newline that ends an unfinished last line of the
	// job's), tail -v's before a header (it writes one before each header
	// but the first), or else the job's.
	after, cur, blank := false, 0, false
	split := &lines{fn: func(l []byte) {
		switch {
		case after:
			if rest, ok := bytes.CutPrefix(l, []byte("fate|")); ok {
				key, rest, _ := bytes.Cut(rest, []byte("|"))
				id, words, _ := bytes.Cut(rest, []byte("|"))
				if k, ok := keys[string(key)]; ok {
					sinks[k].fate(string(id), string(words))
				}
				return
			}
			if acct.Len() < maxAccounting {
				acct.Write(l)
				acct.WriteByte('\n')
			}
			return
		case string(l) == mark:
			after, blank = true, false
			return
		case array:
			// tail -v's "==> DIR/TOKEN/job-ID_K.out <==": which array
			// task's file follows.
			if m := headerRE.FindSubmatch(l); m != nil {
				if k, err := strconv.Atoi(string(m[1])); err == nil && k < len(trials) {
					cur, blank = k, false
					return
				}
			}
		}
		if blank {
			sinks[cur].line(nil)
		}
		if blank = len(l) == 0; !blank {
			sinks[cur].line(l)
		}
	}}
	script := followSh.With(shscript.Set("tfhive_job", f.Job.JobID), shscript.Set("tfhive_out", f.Job.Output),
		shscript.Set("tfhive_array", arrayWord(f.Job.Array)), shscript.Set("tfhive_dir", f.Job.Dir),
		shscript.Set("tfhive_rundir", RemoteDir(f.RunID)), shscript.Set("tfhive_token", tok),
		shscript.Set("tfhive_tasks", strings.Join(ids, " ")),
		shscript.Set("tfhive_from", "1"), shscript.Set("tfhive_poll", pollWord(poll)), shscript.Set("tfhive_mark", mark))
	errb := limited()
	// The job's output is read to its end whatever ctx does: a stop
	// cancels the job, and the run ends when Slurm says so.
	p, err := ex.Start(context.WithoutCancel(ctx), "sh -s", split, errb)
	if err != nil {
		return nil, fmt.Errorf("%s: following job %s: %w", f.Job.Login, f.Job.JobID, err)
	}
	go func() {
		io.WriteString(p.Stdin(), script)
		p.Stdin().Close()
	}()
	done := make(chan struct{})
	interrupt := 0
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-done:
		case <-ctx.Done():
			interrupt = 130
			if f.Interrupt != nil {
				interrupt = f.Interrupt()
			}
			fmt.Fprintf(f.Stderr, "tfhive: stopping job %s (scancel, SIGTERM to its steps, the rest after --grace %s)\n", f.Job.JobID, f.Grace)
			if err := Cancel(context.WithoutCancel(ctx), ex, f.RunID, f.Job.JobID, f.Grace); err != nil {
				fmt.Fprintf(f.Stderr, "tfhive: warning: %s: scancel %s: %v\n", f.Job.Login, f.Job.JobID, err)
			}
		}
	}()
	rc, err := p.Wait()
	close(done)
	<-stopped
	split.flush()
	if err != nil {
		return nil, fmt.Errorf("%s: following job %s: %w (the job goes on without tfhive: tfhive attach RUN with -H or --hosts follows it again, tfhive kill RUN cancels it)", f.Job.Login, f.Job.JobID, err)
	}
	if rc != 0 || !after {
		return nil, fmt.Errorf("%s: following job %s: exit %d: %s", f.Job.Login, f.Job.JobID, rc, cut(strings.TrimSpace(errb.String()), 400))
	}
	cancelled := bytes.HasPrefix(acct.Bytes(), []byte("cancelled\n"))
	ends := make([]TrialEnd, len(trials))
	var recs map[int]Accounting
	var alive map[int]bool
	if array {
		recs = ParseArray(acct.Bytes(), f.Job.JobID)
		alive = CancelledTasks(acct.Bytes(), f.Job.JobID)
	}
	for k := range trials {
		var a Accounting
		var found bool
		if array {
			a, found = recs[k]
		} else {
			a, found = ParseAccounting(acct.Bytes(), f.Job.JobID)
		}
		// A sweep's trial that had ended before tfhive kill or Ctrl-C
		// keeps its own end; where cancel.sh could not tell which had not
		// (squeue failed), each is cancelled.
		stop := interrupt
		a.Cancelled = cancelled && (!array || len(alive) == 0 || alive[k])
		if array && cancelled && !a.Cancelled {
			stop = 0
		}
		end := Outcome(a, found, stop)
		ends[k] = TrialEnd{Tasks: sinks[k].results(end.ExitCode != 0), Ended: end, Acct: a}
	}
	return ends, nil
}

func pollWord(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

func token() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Cancel stops run id's job jobID with the grace (cancel.sh): SIGTERM to
// its steps, scancel once it has ended or grace later. The file it
// leaves to say so (job-ID.out.cancelled in RemoteDir, which follow.sh
// looks for) is made there from the two ids, never from a path a record
// names.
func Cancel(ctx context.Context, ex remote.Executor, runID, jobID string, grace time.Duration) error {
	if !runIDRE.MatchString(runID) || !jobIDRE.MatchString(jobID) {
		return fmt.Errorf("run %q, job %q: not a run's Slurm job", cut(runID, 64), cut(jobID, 20))
	}
	script := cancelSh.With(shscript.Set("tfhive_job", jobID), shscript.Set("tfhive_rundir", RemoteDir(runID)),
		shscript.Set("tfhive_grace", strconv.Itoa(int(math.Ceil(grace.Seconds())))))
	errb := limited()
	rc, err := ex.Run(ctx, "sh -s", strings.NewReader(script), io.Discard, errb)
	if err == nil && rc != 0 {
		err = fmt.Errorf("exit %d: %s", rc, strings.TrimSpace(errb.String()))
	}
	return err
}
