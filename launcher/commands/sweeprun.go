package commands

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
)

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
	o   *SweepOptions
	rec record.Sweep
	dir string
	// stderr is where the sweep says what it does (also into console,
	// its console.log; nil for a keeper, whose stdout that is).
	stderr, console io.Writer
	hosts           []inventory.Host
	opts            probe.Options
	shared          *probe.Shared
	probes          *probe.Coalescer
	book            *sweep.Book
	tree            *codesync.Tree
	q               *sweep.Queue
	ends            chan trialEnd
	mu              sync.Mutex
	trialSigs       map[int]*Signals
	interrupted     os.Signal
	killed          bool
}

// run runs the trials not yet succeeded, prints the table and returns the
// sweep's end: nil when every trial succeeded.
func (o *SweepOptions) run(ctx context.Context, rec record.Sweep, dir string, results map[string]string, trialGPUs int, tree *codesync.Tree) error {
	if err := rundir.Make(dir); err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	// A stop file that a kill left for a sweep that ended before it read
	// it is stale: it goes before the lock is taken. `tfhive kill` writes
	// one only while the lock is held, so once this sweep holds it, no
	// kill of it is lost.
	if !rundir.GoesOn(dir) {
		os.Remove(filepath.Join(dir, rundir.SweepStop))
	}
	release, err := rundir.HoldLock(dir)
	if err != nil {
		return &UsageError{Msg: fmt.Sprintf("sweep %s is running", rec.Name), Fix: "tfhive wait " + rec.Name + " waits for its end"}
	}
	defer release()
	if err := writeSweepRecord(dir, rec); err != nil {
		return err
	}
	s := &sweepRun{o: o, rec: rec, dir: dir, tree: tree, ends: make(chan trialEnd), trialSigs: map[int]*Signals{}}
	if f := s.openConsole(); f != nil {
		defer f.Close()
	}
	hosts, opts, err := fleetOptions(o.Run.Hosts, io.Discard, probeGPUs)
	if err != nil {
		return err
	}
	s.shared = probe.NewShared(opts)
	defer s.shared.Close()
	// The trials share their probes: each joins the next probe of the
	// hosts, instead of all probing every host at once.
	s.probes = probe.NewCoalescer()
	defer s.probes.Close()
	// The trials plan apart: none picks a GPU that a sibling has planned.
	s.book = sweep.NewBook()
	opts.Dial = s.shared.Dialer()
	s.hosts, s.opts = hosts, opts
	ids := make([]string, len(rec.Trials))
	for i, t := range rec.Trials {
		ids[i] = t.ID
	}
	resumed, fleetGPUs, closeFleet, err := s.probeFleet(ctx, sweep.Todo(ids, results), trialGPUs)
	defer closeFleet()
	if err != nil {
		return err
	}
	if err := setAside(rec, resumed.todo); err != nil {
		return err
	}
	adopted := len(resumed.running)
	parallel := sweep.Parallel(o.MaxParallel, fleetGPUs, trialGPUs, max(len(resumed.todo)+adopted, 1))
	s.sayStart(resumed.todo, adopted, parallel)
	sigs := o.Run.Signals
	if sigs == nil {
		sigs = NewSignals(func(error) {})
	}
	if !sigs.toLauncher() {
		return context.Canceled
	}
	defer sigs.toContext()
	s.q = sweep.NewQueue(resumed.todo, parallel, o.MaxFailures)
	if err := s.loop(ctx, sigs, resumed.running); err != nil {
		return err
	}
	return s.end()
}

// openConsole: a foreground sweep's lines go to its console.log too
// (tfhive logs and attach read a sweep as they read a detached one); a
// keeper's stdout is the console.log, keeper.log is for its errors. It
// returns the file to close, if any.
func (s *sweepRun) openConsole() *os.File {
	s.stderr = s.o.Run.Stderr
	var f *os.File
	if keeperMode() {
		s.stderr = s.o.Run.Stdout
	} else if c, err := rundir.OpenFile(filepath.Join(s.dir, rundir.Console), os.O_CREATE|os.O_WRONLY|os.O_APPEND); err == nil {
		f, s.console = c, c
		s.stderr = io.MultiWriter(s.stderr, c)
	}
	s.stderr = &serialWriter{w: s.stderr}
	return f
}

// probeFleet counts the fleet's GPUs, once, when the sweep runs as many
// trials as fit, and asks the hosts about the trials of a resumed sweep
// over the same probe (sweepadopt.go): which still run, to adopt, and
// which are to run. closeFleet closes that probe's fleet at the sweep's
// end.
func (s *sweepRun) probeFleet(ctx context.Context, todo []int, trialGPUs int) (resumed resumeTrials, fleetGPUs int, closeFleet func(), err error) {
	o, rec := s.o, s.rec
	resumed, closeFleet = resumeTrials{todo: todo}, func() {}
	if len(todo) == 0 || !(o.MaxParallel == 0 || o.adoptOnly || slices.ContainsFunc(todo, func(i int) bool { return hasLogDir(rec.Trials[i].ID) })) {
		return resumed, 0, closeFleet, nil
	}
	f := probe.NewFleet(s.hosts, s.opts)
	closeFleet = f.Close
	inv, err := probeAll(ctx, f)
	if err != nil {
		return resumed, 0, closeFleet, err
	}
	execs := map[string]remote.Executor{}
	for i, h := range inv.Hosts {
		fleetGPUs += len(h.GPUs)
		if h.Err == nil {
			execs[f.Hosts[i].Name] = f.Executor(i)
		}
	}
	if o.MaxParallel == 0 && fleetGPUs == 0 && trialGPUs > 0 {
		if err := job.Unreachable(inv); err != nil {
			return resumed, fleetGPUs, closeFleet, err
		}
	}
	resumed = o.resume(ctx, rec, todo, execs, s.hosts, s.opts, s.stderr)
	if o.adoptOnly {
		resumed.todo = nil
	}
	return resumed, fleetGPUs, closeFleet, nil
}

// sayStart says what the sweep is about to do.
func (s *sweepRun) sayStart(todo []int, adopted, parallel int) {
	rec := s.rec
	done := 0
	for _, t := range rec.Trials {
		if r, err := readTrialSummary(rundir.Path(t.ID)); err == nil && r.RunID == t.ID && r.Result == record.ResultSucceeded {
			done++
		}
	}
	still := ""
	if adopted > 0 {
		still = fmt.Sprintf(", %s still running on the hosts, adopted", wording.Count(adopted, "trial"))
	}
	switch {
	case s.o.adoptOnly:
		fmt.Fprintf(s.stderr, "tfhive: sweep %s: %d of %d trials succeeded%s\n", rec.Name, done, len(rec.Trials), still)
	case len(todo) == 0 && adopted == 0:
		fmt.Fprintf(s.stderr, "tfhive: sweep %s: all %d trials succeeded before; nothing to run\n", rec.Name, len(rec.Trials))
	case done > 0 || adopted > 0:
		fmt.Fprintf(s.stderr, "tfhive: sweep %s: %d of %d trials to run (%d succeeded before%s), %d at a time\n", rec.Name, len(todo), len(rec.Trials), done, still, parallel)
	default:
		fmt.Fprintf(s.stderr, "tfhive: sweep %s: %d trials, %d at a time; a trial's output: tfhive logs %s\n", rec.Name, len(todo), parallel, rec.Trials[todo[0]].ID)
	}
}

// loop starts trials as the queue lets it, adopting those still running
// first, and hears their ends, the signals and kill's stop file until the
// queue is finished; attach SWEEP -H's Ctrl-C detaches (an error), the
// adopted trials going on.
func (s *sweepRun) loop(ctx context.Context, sigs *Signals, running map[int][]launcher.FoundRun) error {
	var detached <-chan struct{}
	trialCtx := ctx
	if s.o.adoptOnly {
		detached, trialCtx = ctx.Done(), context.WithoutCancel(ctx)
	}
	tick := time.NewTicker(sweepStopPoll)
	defer tick.Stop()
	for _, i := range slices.Sorted(maps.Keys(running)) {
		s.adopt(trialCtx, i, running[i])
	}
	for {
		// Before any trial starts: a trial that kill stopped on the
		// hosts must not make room for another.
		s.askedToStop()
		for {
			i, ok := s.q.Next()
			if !ok {
				break
			}
			s.start(ctx, i)
		}
		if s.q.Finished() {
			return nil
		}
		select {
		case e := <-s.ends:
			s.ended(e)
		case sig := <-sigs.run:
			s.signalled(sig)
		case <-tick.C:
		case <-detached:
			fmt.Fprintf(s.o.Run.Stderr, "tfhive: detached from sweep %s; its trials go on, kept, until a keeper attaches (tfhive attach %s -H …) or --unattended passes\n", s.rec.Name, s.rec.Name)
			if stdoutClosed(ctx) {
				return ErrStdoutClosed
			}
			return &ExitError{Code: 130}
		}
	}
}

// adopt follows trial i, still running on its hosts, to its end.
func (s *sweepRun) adopt(ctx context.Context, i int, found []launcher.FoundRun) {
	t := s.rec.Trials[i]
	s.q.Adopt()
	ts := NewSignals(func(error) {})
	s.setSignals(i, ts)
	fmt.Fprintf(s.stderr, "tfhive: trial %s still runs on its hosts: adopted, its output followed to its end (%s)\n", t.ID, paramsLine(s.rec, t))
	go func() {
		sum, err := s.o.adoptTrial(ctx, s.rec, t, found, s.hosts, s.opts, ts)
		s.ends <- trialEnd{i: i, sum: sum, err: err, started: true}
	}()
}

// start starts trial i; its end comes on ends.
func (s *sweepRun) start(ctx context.Context, i int) {
	t := s.rec.Trials[i]
	tctx, cancel := context.WithCancelCause(ctx)
	ts := NewSignals(cancel)
	s.setSignals(i, ts)
	go func() {
		defer cancel(nil)
		var began atomic.Bool
		sum, err := s.trial(tctx, t, ts, func() {
			began.Store(true)
			fmt.Fprintf(s.stderr, "tfhive: trial %s started (%s)\n", t.ID, paramsLine(s.rec, t))
		})
		s.ends <- trialEnd{i: i, sum: sum, err: err, started: began.Load()}
	}()
}

func (s *sweepRun) setSignals(i int, ts *Signals) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts == nil {
		delete(s.trialSigs, i)
	} else {
		s.trialSigs[i] = ts
	}
}

// stopAll delivers sig to every trial under way.
func (s *sweepRun) stopAll(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ts := range s.trialSigs {
		ts.Deliver(sig)
	}
}

// askedToStop stops the sweep once `tfhive kill` asked it to.
func (s *sweepRun) askedToStop() {
	if !s.killed && stopAsked(s.dir) {
		s.killed = true
		s.q.Stop()
		fmt.Fprintf(s.stderr, "tfhive: sweep %s: tfhive kill asked it to stop; stopping its trials\n", s.rec.Name)
		s.stopAll(launcher.Cancel)
	}
}

// ended hears a trial's end and says it.
func (s *sweepRun) ended(e trialEnd) {
	s.setSignals(e.i, nil)
	ok := e.sum != nil && e.sum.Result == record.ResultSucceeded
	s.q.Done(ok)
	line := endLine(e)
	if e.sum == nil && !e.started && (s.interrupted != nil || s.killed) {
		// Stopped while it waited its turn: it never ran, and leaves
		// nothing (its row says "not run").
		os.RemoveAll(rundir.Path(s.rec.Trials[e.i].ID))
		line = "not started: the sweep was stopped while it waited"
	}
	fmt.Fprintf(s.stderr, "tfhive: trial %s %s\n", s.rec.Trials[e.i].ID, line)
}

// signalled stops the sweep's trials on a signal, once said.
func (s *sweepRun) signalled(sig os.Signal) {
	if sig == launcher.StdoutClosed && s.interrupted != nil {
		return
	}
	if s.interrupted == nil {
		s.interrupted = sig
		s.q.Stop()
		fmt.Fprintf(s.stderr, "tfhive: sweep %s: stopping its trials\n", s.rec.Name)
	}
	s.stopAll(sig)
}

// end prints the table (into console.log too), writes the report and
// says how the sweep ended.
func (s *sweepRun) end() error {
	o, rec := s.o, s.rec
	tab := sweepTable(rec, o.Run.Stderr)
	view.SortSweep(tab.Trials, o.Sort, o.Reverse)
	if err := writeSweepTable(o.Run.Stdout, tab, o.Run.JSON, o.CSV); err != nil {
		return err
	}
	if s.console != nil && !o.Run.JSON && !o.CSV {
		// The table in the console.log too, for logs and attach.
		view.WriteSweep(s.console, tab)
	}
	writeSweepReport(s.dir, o.Run.Stderr)
	if s.interrupted != nil {
		return context.Canceled
	}
	failed := 0
	for _, r := range tab.Trials {
		if r.Result != record.ResultSucceeded {
			failed++
		}
	}
	if failed > 0 {
		return &SweepFailedError{Name: rec.Name, Failed: failed, Total: len(tab.Trials), Stopped: s.q.Stopped() && len(s.q.Unstarted()) > 0}
	}
	return nil
}

// trial runs trial t as `tfhive run --wait` would (job.Run; without
// --wait it waits its turn until the sweep ends), its console in its log
// dir, over the sweep's shared connections, sharing its probes, placed by
// the sweep's book; its summary is returned, not read back.
func (s *sweepRun) trial(ctx context.Context, t record.SweepTrial, sigs *Signals, started func()) (*record.Summary, error) {
	tdir := rundir.Path(t.ID)
	if err := rundir.Make(tdir); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	console, err := rundir.OpenFile(filepath.Join(tdir, rundir.Console), os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	defer console.Close()
	r := s.o.Run
	w := &serialWriter{w: console}
	r.Streams = Streams{Stdout: w, Stderr: w, Color: "never"}
	r.Hosts.Dial = s.shared.Dialer()
	r.Hosts.Coalesce = s.probes
	r.Job.Name = t.ID
	r.Job.Command = sweep.Command(s.rec.Command, t.Params)
	r.Env = append(slices.Clone(s.o.Run.Env), sweep.Env(t)...)
	r.Detach, r.JSON, r.Quiet = false, false, false
	r.Signals = sigs
	sum, err := run(ctx, r, runAs{tree: s.tree, trial: &trialHooks{started: started, book: s.book}})
	if sum == nil {
		fmt.Fprintf(w, "tfhive: error: %v\n", err)
		return nil, err
	}
	return sum, nil
}
