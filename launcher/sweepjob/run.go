package sweepjob

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/wording"
)

// StopPoll is how often a sweep looks for `tfhive kill`'s stop file.
const StopPoll = 200 * time.Millisecond

// trialEnd is a trial's end, as the sweep's loop hears it.
type trialEnd struct {
	i       int
	sum     *record.Summary // nil: it left none
	err     error
	started bool // every task started
}

// sweepRun is a sweep under way: its lines, the connections, probes and
// placement book its trials share, its queue, and each trial's signals.
type sweepRun struct {
	spec  Spec
	hooks Hooks
	rec   record.Sweep
	dir   string
	// say is where the sweep says what it does (also into console, its
	// console.log, when it keeps one).
	say, console io.Writer
	opts         probe.Options // the fleet's, over shared
	shared       *probe.Shared
	probes       *probe.Coalescer
	book         *sweep.Book
	q            *sweep.Queue
	ends         chan trialEnd
	mu           sync.Mutex
	trialSigs    map[int]*job.Signals
	interrupted  os.Signal
	killed       bool
}

// run probes what it must, adopts, runs the trials the queue lets it and
// ends with Hooks.End.
func (r *sweepRun) run(ctx context.Context) error {
	s, rec := r.spec, r.rec
	ids := make([]string, len(rec.Trials))
	for i, t := range rec.Trials {
		ids[i] = t.ID
	}
	resumed, fleetGPUs, closeFleet, err := r.probeFleet(ctx, sweep.Todo(ids, logroot.Results(rec)))
	defer closeFleet()
	if err != nil {
		return err
	}
	if err := setAside(rec, resumed.todo); err != nil {
		return err
	}
	adopted := len(resumed.running)
	parallel := sweep.Parallel(s.MaxParallel, fleetGPUs, s.TrialGPUs, max(len(resumed.todo)+adopted, 1))
	r.sayStart(resumed.todo, adopted, parallel)
	sigs := s.Signals
	if sigs == nil {
		sigs = job.NewSignals(func(error) {})
	}
	if !sigs.ToLauncher() {
		return context.Canceled
	}
	defer sigs.ToContext()
	r.q = sweep.NewQueue(resumed.todo, parallel, s.MaxFailures)
	if err := r.loop(ctx, sigs, resumed.running); err != nil {
		return err
	}
	var console io.Writer
	if r.console != nil {
		console = r.console
	}
	return r.hooks.End(console, End{Interrupted: r.interrupted != nil, Stopped: r.q.Stopped() && len(r.q.Unstarted()) > 0})
}

// sayStart says what the sweep is about to do.
func (r *sweepRun) sayStart(todo []int, adopted, parallel int) {
	rec := r.rec
	done := 0
	for _, t := range rec.Trials {
		if s, err := logroot.TrialSummary(rundir.Path(t.ID)); err == nil && s.RunID == t.ID && s.Result == record.ResultSucceeded {
			done++
		}
	}
	still := ""
	if adopted > 0 {
		still = fmt.Sprintf(", %s still running on the hosts, adopted", wording.Count(adopted, "trial"))
	}
	switch {
	case r.spec.AdoptOnly:
		fmt.Fprintf(r.say, "tfhive: sweep %s: %d of %d trials succeeded%s\n", rec.Name, done, len(rec.Trials), still)
	case len(todo) == 0 && adopted == 0:
		fmt.Fprintf(r.say, "tfhive: sweep %s: all %d trials succeeded before; nothing to run\n", rec.Name, len(rec.Trials))
	case done > 0 || adopted > 0:
		fmt.Fprintf(r.say, "tfhive: sweep %s: %d of %d trials to run (%d succeeded before%s), %d at a time\n", rec.Name, len(todo), len(rec.Trials), done, still, parallel)
	default:
		fmt.Fprintf(r.say, "tfhive: sweep %s: %d trials, %d at a time; a trial's output: tfhive logs %s\n", rec.Name, len(todo), parallel, rec.Trials[todo[0]].ID)
	}
}

// loop starts trials as the queue lets it, adopting those still running
// first, and hears their ends, the signals and kill's stop file until the
// queue is finished; attach SWEEP -H's end of ctx detaches
// (ErrDetached), the adopted trials going on.
func (r *sweepRun) loop(ctx context.Context, sigs *job.Signals, running map[int][]launcher.FoundRun) error {
	var detached <-chan struct{}
	trialCtx := ctx
	if r.spec.AdoptOnly {
		detached, trialCtx = ctx.Done(), context.WithoutCancel(ctx)
	}
	tick := time.NewTicker(StopPoll)
	defer tick.Stop()
	for _, i := range slices.Sorted(maps.Keys(running)) {
		r.adopt(trialCtx, i, running[i])
	}
	for {
		// Before any trial starts: a trial that kill stopped on the
		// hosts must not make room for another.
		r.askedToStop()
		for {
			i, ok := r.q.Next()
			if !ok {
				break
			}
			r.start(ctx, i)
		}
		if r.q.Finished() {
			return nil
		}
		select {
		case e := <-r.ends:
			r.ended(e)
		case sig := <-sigs.Routed():
			r.signalled(sig)
		case <-tick.C:
		case <-detached:
			return fmt.Errorf("sweep %s: %w", r.rec.Name, ErrDetached)
		}
	}
}

// adopt follows trial i, still running on its hosts, to its end.
func (r *sweepRun) adopt(ctx context.Context, i int, found []launcher.FoundRun) {
	t := r.rec.Trials[i]
	r.q.Adopt()
	ts := job.NewSignals(func(error) {})
	r.setSignals(i, ts)
	fmt.Fprintf(r.say, "tfhive: trial %s still runs on its hosts: adopted, its output followed to its end (%s)\n", t.ID, paramsLine(r.rec, t))
	go func() {
		sum, err := r.adoptTrial(ctx, t, found, ts)
		r.ends <- trialEnd{i: i, sum: sum, err: err, started: true}
	}()
}

// start starts trial i; its end comes on ends.
func (r *sweepRun) start(ctx context.Context, i int) {
	t := r.rec.Trials[i]
	tctx, cancel := context.WithCancelCause(ctx)
	ts := job.NewSignals(cancel)
	r.setSignals(i, ts)
	go func() {
		defer cancel(nil)
		var began atomic.Bool
		sum, err := r.trial(tctx, t, ts, func() {
			began.Store(true)
			fmt.Fprintf(r.say, "tfhive: trial %s started (%s)\n", t.ID, paramsLine(r.rec, t))
		})
		r.ends <- trialEnd{i: i, sum: sum, err: err, started: began.Load()}
	}()
}

func (r *sweepRun) setSignals(i int, ts *job.Signals) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ts == nil {
		delete(r.trialSigs, i)
	} else {
		r.trialSigs[i] = ts
	}
}

// stopAll delivers sig to every trial under way.
func (r *sweepRun) stopAll(sig os.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ts := range r.trialSigs {
		ts.Deliver(sig)
	}
}

// askedToStop stops the sweep once `tfhive kill` asked it to: its word
// is the stop file in the sweep's dir.
func (r *sweepRun) askedToStop() {
	if r.killed {
		return
	}
	if _, err := os.Lstat(filepath.Join(r.dir, rundir.SweepStop)); err == nil {
		r.killed = true
		r.q.Stop()
		fmt.Fprintf(r.say, "tfhive: sweep %s: tfhive kill asked it to stop; stopping its trials\n", r.rec.Name)
		r.stopAll(launcher.Cancel)
	}
}

// ended hears a trial's end and says it.
func (r *sweepRun) ended(e trialEnd) {
	r.setSignals(e.i, nil)
	// The next trial may plan on a probe made before this end (the
	// newest, probe.Coalescer's seed): the book takes out of it what
	// this trial held. A colleague who queued for the GPU meanwhile is
	// seen only by a probe begun after: the start's claim check sees
	// the queue then, and the trial plans again (supervisor.Task.Seeded;
	// without it the trial took the GPU from the colleague waiting
	// ahead: TestSweepDoesNotStarveColleague, TestSweepFairToColleague).
	r.book.End(r.rec.Trials[e.i].ID)
	ok := e.sum != nil && e.sum.Result == record.ResultSucceeded
	r.q.Done(ok)
	line := r.hooks.EndLine(e.sum, e.err)
	if e.sum == nil && !e.started && (r.interrupted != nil || r.killed) {
		// Stopped while it waited its turn: it never ran, and leaves
		// nothing (its row says "not run").
		os.RemoveAll(rundir.Path(r.rec.Trials[e.i].ID))
		line = "not started: the sweep was stopped while it waited"
	}
	fmt.Fprintf(r.say, "tfhive: trial %s %s\n", r.rec.Trials[e.i].ID, line)
}

// signalled stops the sweep's trials on a signal, once said.
func (r *sweepRun) signalled(sig os.Signal) {
	if sig == launcher.StdoutClosed && r.interrupted != nil {
		return
	}
	if r.interrupted == nil {
		r.interrupted = sig
		r.q.Stop()
		fmt.Fprintf(r.say, "tfhive: sweep %s: stopping its trials\n", r.rec.Name)
	}
	r.stopAll(sig)
}

// trial runs trial t through Hooks.Trial (without --wait it waits its
// turn until the sweep ends), its console in its log dir, over the
// sweep's shared connections, sharing its probes, placed by the sweep's
// book.
func (r *sweepRun) trial(ctx context.Context, t record.SweepTrial, sigs *job.Signals, started func()) (*record.Summary, error) {
	tdir := rundir.Path(t.ID)
	if err := rundir.Make(tdir); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	console, err := rundir.OpenFile(filepath.Join(tdir, rundir.Console), os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	defer console.Close()
	w := &serialWriter{w: console}
	sum, err := r.hooks.Trial(ctx, Trial{SweepTrial: t, Command: sweep.Command(r.rec.Command, t.Params), Env: sweep.Env(t),
		Console: w, Dial: r.fleetOpts().Dial, Coalesce: r.probes, Book: r.book, Signals: sigs, Started: started})
	if sum == nil {
		fmt.Fprintf(w, "tfhive: error: %v\n", err)
		return nil, err
	}
	return sum, nil
}

// paramsLine is a trial's parameters, NAME=VALUE in --param order.
func paramsLine(rec record.Sweep, t record.SweepTrial) string {
	var ps []string
	for _, p := range rec.Params {
		ps = append(ps, p.Name+"="+t.Params[p.Name])
	}
	return strings.Join(ps, " ")
}
