package launcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
	"golang.org/x/sync/errgroup"
)

// A kept run can be adopted: from any machine that reaches its hosts,
// `tfhive attach RUN -H …` finds what the hosts hold of it (FindRun),
// rebuilds the plan the lifecycle needs (AdoptedPlan) and runs it with
// Options.Adopted: every task followed from its first byte, under a
// keeper generation one above the newest on record, so that an older
// keeper that comes back is refused and steps down (scripts/attach.sh,
// rundir.sh's tfhive_feed).

// restartOfInfo is the policy and the mark a RunInfo carries; Max 0 without.
func restartOfInfo(ri *record.RunInfo) (lifecycle.Restart, string) {
	if ri == nil || ri.Restart == nil {
		return lifecycle.Restart{}, ""
	}
	rs := lifecycle.Restart{Max: ri.Restart.Max, Backoff: ri.Restart.Backoff}
	if ri.Restart.On != "" {
		// A description that does not parse restarts on any failure.
		rs.On, _ = lifecycle.ParseRestartOn(ri.Restart.On)
	}
	return rs, ri.Restart.Mark
}

// runInfoOf is plan's RunInfo, as one line of JSON, with the restart
// policy and mark when rs restarts.
func runInfoOf(p *schedule.Plan, rs lifecycle.Restart, mark string) string {
	ri := record.RunInfo{RunID: p.RunID, Framework: p.Framework, Chief: len(p.Cluster.Chief) > 0}
	if rs.Max > 0 {
		ri.Restart = &record.RunInfoRestart{Max: rs.Max, Backoff: rs.Backoff, Mark: mark}
		if rs.On != nil {
			ri.Restart.On = rs.On.String()
		}
	}
	for _, t := range p.Tasks {
		ri.Tasks = append(ri.Tasks, record.RunInfoTask{ID: t.ID, GPUs: t.GPUs})
	}
	b, _ := json.Marshal(ri)
	return string(b)
}

// firstOnHost: task i is the first of the plan on its host.
func (r *runner) firstOnHost(i int) bool {
	return slices.IndexFunc(r.tasks, func(rt *runTask) bool { return rt.t.Host == r.tasks[i].t.Host }) == i
}

// adoptAll takes over tasks that already run: each is followed again from
// its first byte into fresh local logs.
func (r *runner) adoptAll() {
	r.p.Adopted()
	for i, rt := range r.tasks {
		r.p.SetAttempt(i, r.o.Attempts[rt.t.ID])
		rt.started = time.Now()
		rt.attemptStart = rt.started
		rt.goSent.Store(true)
		logf, err := rundir.OpenFile(rt.res.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			r.apply(lifecycle.Event{Kind: lifecycle.EvLost, Task: i, Err: err.Error()})
			continue
		}
		rt.log = logf
		rt.out = r.o.Console.Task(rt.t.ID+" "+rt.t.Host, logf, r.o.Quiet)
		rt.out.captureInto(r.o.Captures, rt.t.ID, r.series)
		r.taskEvent(i, record.EventAdopted, "")
		r.attach(i)
	}
	r.o.Console.Printf("tfhive: run %s adopted (keeper generation %d): %s on %s, logs in %s", r.o.Plan.RunID, r.gen(),
		wording.Count(len(r.tasks), "task"), wording.Count(len(r.o.Plan.Hosts()), "host"), r.o.LogDir)
}

// ErrNoSuchRun: no host holds anything of the run (AdoptedPlan); its
// other errors say what the hosts hold and why it cannot be kept.
var ErrNoSuchRun = errors.New("no such run")

// FoundRun is what one host holds of a run.
type FoundRun struct {
	Host string
	// None says why the host holds nothing of it ("" when it does).
	None string
	Info *record.RunInfo
	// BadInfo says why the host's description of the run (run.json)
	// could not be read: garbled, or another run's.
	BadInfo string
	Gen     int
	// Tasks: each task whose files are on the host, and whether its
	// supervisor is "alive", "ended" or "gone"; Attempts the attempt each
	// is at (--restarts).
	Tasks    map[string]string
	Attempts map[string]int
	Err      error // the host could not be asked
}

// The bounds of a host's answer to the scripts that report on a run's
// directory (find-run.sh, set-aside.sh): a run.json line (parseFoundRun
// takes lines of up to 2 MiB) and a line per task, after what the login
// prints; its stderr is read for its first line. An answer past its bound
// is not read at all: what the host holds is unknown.
const (
	maxRunAnswer = 4 << 20
	maxRunStderr = 64 << 10
)

// FindRun asks every host, in parallel and bounded, what it holds of run
// id (scripts/find-run.sh): one round trip each, over its connection.
func FindRun(ctx context.Context, execs map[string]remote.Executor, id string, parallel int) []FoundRun {
	names := slices.Sorted(func(yield func(string) bool) {
		for h := range execs {
			if !yield(h) {
				return
			}
		}
	})
	found := make([]FoundRun, len(names))
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	var mu sync.Mutex
	for i, h := range names {
		g.Go(func() error {
			rc, out, errb, err := remote.RunBounded(ctx, execs[h], supervisor.Command, strings.NewReader(findRunInput(id)), maxRunAnswer, maxRunStderr)
			f := parseFoundRun(h, out)
			switch {
			case errors.Is(err, remote.ErrTooMuchOutput):
				f = FoundRun{Host: h, Err: fmt.Errorf("%w: what it holds of the run is unknown", err)}
			case err == nil && rc != 0:
				err = fmt.Errorf("exit %d: %s", rc, wording.FirstLine(string(errb)))
			}
			if f.Err == nil {
				f.Err = err
			}
			mu.Lock()
			found[i] = f
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	return found
}

func parseFoundRun(host string, out []byte) FoundRun {
	f := FoundRun{Host: host, Tasks: map[string]string{}, Attempts: map[string]int{}, Gen: 1}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 2<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "@@tfhive-none "):
			f.None = strings.TrimPrefix(line, "@@tfhive-none ")
		case strings.HasPrefix(line, "@@tfhive-run "):
			var ri record.RunInfo
			text := strings.TrimPrefix(line, "@@tfhive-run ")
			if err := json.Unmarshal([]byte(text), &ri); err == nil {
				f.Info = &ri
			} else if text != "" {
				f.BadInfo = "its run.json is not a run's description (" + wording.FirstLine(err.Error()) + ")"
			}
		case strings.HasPrefix(line, "@@tfhive-gen "):
			if n, err := strconv.Atoi(strings.TrimPrefix(line, "@@tfhive-gen ")); err == nil && n > 0 {
				f.Gen = n
			}
		case strings.HasPrefix(line, "@@tfhive-task "):
			if id, state, ok := strings.Cut(strings.TrimPrefix(line, "@@tfhive-task "), " "); ok {
				state, at, _ := strings.Cut(state, " ")
				f.Tasks[id] = state
				if n, err := strconv.Atoi(at); err == nil && n > 0 {
					f.Attempts[id] = n
				}
			}
		}
	}
	if f.None == "" && f.Info == nil && len(f.Tasks) == 0 {
		f.None = "no answer about the run"
	}
	return f
}

// AdoptedOptions are what a keeper that adopts run id runs (RunPlan,
// Adopted), as far as the hosts' answers (found) say: the plan, a keeper
// generation above the newest on record, the restart policy and each
// task's attempt. The caller adds the connections, log dir and console.
// attach -H and a resumed sweep's trials (launcher/sweepjob) adopt alike.
func AdoptedOptions(id string, found []FoundRun) (Options, error) {
	plan, gen, err := AdoptedPlan(id, found)
	if err != nil {
		return Options{}, err
	}
	lo := Options{Plan: plan, Adopted: true, Gen: gen + 1, Sample: DefaultSample}
	lo.Restart, lo.Mark, lo.Attempts = AdoptedRestart(id, found)
	return lo, nil
}

// AdoptedPlan is the plan a keeper that adopts the run follows: each task
// of the run's description on the host that holds its files, and the
// newest keeper generation on record. A task no host holds is an error:
// the run cannot be kept whole.
func AdoptedPlan(id string, found []FoundRun) (*schedule.Plan, int, error) {
	var info *record.RunInfo
	gen := 0
	where := map[string]string{}
	var bad []string
	for _, f := range found {
		if f.Err != nil || f.None != "" {
			continue
		}
		switch {
		case f.Info != nil && f.Info.RunID != id:
			bad = append(bad, fmt.Sprintf("%s: its run.json describes run %q", f.Host, f.Info.RunID))
		case f.BadInfo != "":
			bad = append(bad, f.Host+": "+f.BadInfo)
		}
		if info == nil && f.Info != nil && f.Info.RunID == id {
			info = f.Info
		}
		gen = max(gen, f.Gen)
		for t := range f.Tasks {
			where[t] = f.Host
		}
	}
	// A host that could not be asked may hold what is missing: the
	// errors below say which, and why.
	note := Unasked(found)
	if info == nil && len(bad) > 0 {
		// The run's files are there, its description is not what tfhive
		// wrote: say so, not that there is no such run.
		return nil, 0, fmt.Errorf("run %s: no host holds a description of it that tfhive can read: %s%s", id, strings.Join(bad, "; "), note)
	}
	if info == nil {
		return nil, 0, fmt.Errorf("no host holds run %s: %w%s", id, ErrNoSuchRun, note)
	}
	p := &schedule.Plan{Version: schedule.PlanVersion, RunID: id, Framework: info.Framework}
	if info.Chief {
		p.Cluster.Chief = []string{"chief"}
	}
	for _, t := range info.Tasks {
		host, ok := where[t.ID]
		if !ok {
			return nil, 0, fmt.Errorf("run %s: no host holds task %s%s", id, t.ID, note)
		}
		role, idx, _ := strings.Cut(t.ID, ":")
		n, _ := strconv.Atoi(idx)
		p.Tasks = append(p.Tasks, schedule.Task{ID: t.ID, Role: role, Index: n, Host: host, GPUs: t.GPUs})
	}
	return p, gen, nil
}

// Unasked names the hosts of found that could not be asked, and why, for
// a message that says the run is not (wholly) there: " (h2 could not be
// asked: its answer passed 4 MiB: …)"; "" when every host answered.
func Unasked(found []FoundRun) string {
	var why []string
	for _, f := range found {
		if f.Err != nil {
			why = append(why, f.Host+" could not be asked: "+wording.FirstLine(f.Err.Error()))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

// AdoptedRestart is the adopted run's restart policy, its attempt lines'
// word and the attempt each task is at, from what the hosts hold.
func AdoptedRestart(id string, found []FoundRun) (lifecycle.Restart, string, map[string]int) {
	attempts := map[string]int{}
	var info *record.RunInfo
	for _, f := range found {
		if f.Err != nil || f.None != "" {
			continue
		}
		if info == nil && f.Info != nil && f.Info.RunID == id {
			info = f.Info
		}
		for t, n := range f.Attempts {
			attempts[t] = n
		}
	}
	rs, mark := restartOfInfo(info)
	return rs, mark, attempts
}

var findRunSh = shscript.Load(scripts, "scripts/rundir.sh", "scripts/find-run.sh")

// findRunInput asks a host what it holds of a kept run
// (scripts/find-run.sh), as a stage for supervisor.Command.
func findRunInput(runID string) string {
	s := findRunSh.With(shscript.Set("tfhive_run", runID))
	return strconv.Itoa(len(s)) + "\n" + s
}
