package sweepjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// Spec is a sweep to run: its record and what its trials share.
type Spec struct {
	// Record is the sweep, its trials expanded (sweep.Trials); its log
	// dir is rundir.Path(Record.Name).
	Record record.Sweep
	// TrialGPUs is how many GPUs a trial takes.
	TrialGPUs int
	// MaxParallel is --max-parallel (0: as many as the fleet's GPUs
	// fit), MaxFailures --max-failures (0: no limit).
	MaxParallel, MaxFailures int
	// AdoptOnly is tfhive attach SWEEP -H: the trials still under way are
	// adopted, none is started, and the end of ctx only detaches
	// (ErrDetached), the adopted trials going on.
	AdoptOnly bool
	// Hosts and Probe are the fleet's: the trials share one connection
	// per host, opened by Probe.Dial (nil: SSH).
	Hosts []inventory.Host
	Probe probe.Options
	// Adopt is the engine's options an adopted trial gets besides what
	// its hosts say (its plan, restarts, attempts): --grace,
	// --reconnect, --sample, --parallel, --hang-after (Hang), and
	// Started.
	Adopt launcher.Options
	// Signals are the sweep's: while trials run, each one stops them all.
	// Nil: none come.
	Signals *job.Signals
	// Say is where the sweep says what it does; Console: into its
	// console.log too (a foreground sweep's: a keeper's Say is that file).
	Say     io.Writer
	Console bool
}

// Hooks are what the caller does for the sweep: a trial's run, what an
// adopted trial captures, a trial's end in words, and the sweep's end.
type Hooks struct {
	// Probe probes a fleet once, as every command does.
	Probe func(context.Context, *probe.Fleet) (inventory.Inventory, error)
	// Trial runs one trial to its summary (job.Run, as `tfhive run
	// --wait` does); nil summary: nothing ran.
	Trial func(context.Context, Trial) (*record.Summary, error)
	// Captures are an adopted trial's --capture, checked against its
	// plan's tasks.
	Captures func(*schedule.Plan) (*launcher.Captures, error)
	// EndLine says how a trial ended (its summary, or why it has none).
	EndLine func(*record.Summary, error) string
	// End is the sweep's end, its lock still held: the caller prints the
	// table (into console too, nil when it has none) and returns the
	// sweep's error.
	End func(console io.Writer, e End) error
}

// Trial is one trial as Hooks.Trial runs it.
type Trial struct {
	record.SweepTrial
	// Command is the sweep's command with the trial's parameters in it,
	// Env its parameters as environment variables (NAME=VALUE).
	Command, Env []string
	// Console is the trial's console.log.
	Console io.Writer
	// Dial opens the sweep's shared connections; Coalesce shares its
	// probes; Book keeps it off its siblings' GPUs.
	Dial     probe.Dialer
	Coalesce *probe.Coalescer
	Book     *sweep.Book
	// Signals are the trial's: the sweep stops it through them.
	Signals *job.Signals
	// Started is to be told once every task started.
	Started func()
}

// End is how the sweep ended, for Hooks.End.
type End struct {
	// Interrupted: a signal stopped it. Stopped: it started not every
	// trial (--max-failures, kill, a signal).
	Interrupted, Stopped bool
}

// ErrRunning: another tfhive holds the sweep's lock.
var ErrRunning = errors.New("running")

// ErrDetached: attach SWEEP -H's ctx ended; its trials go on, kept.
var ErrDetached = errors.New("detached")

// Run runs the trials not yet succeeded, adopting first what a dead
// tfhive left under way, and returns Hooks.End's error.
func Run(ctx context.Context, s Spec, h Hooks) error {
	dir := rundir.Path(s.Record.Name)
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
		return fmt.Errorf("sweep %s: %w", s.Record.Name, ErrRunning)
	}
	defer release()
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.Sweep), s.Record); err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	r := &sweepRun{spec: s, hooks: h, rec: s.Record, dir: dir, ends: make(chan trialEnd), trialSigs: map[int]*job.Signals{}}
	if f := r.openConsole(); f != nil {
		defer f.Close()
	}
	r.shared = probe.NewShared(s.Probe)
	defer r.shared.Close()
	// The trials share their probes: each joins the next probe of the
	// hosts, instead of all probing every host at once.
	r.probes = probe.NewCoalescer()
	r.probes.NewDial = r.shared.Dialer
	defer r.probes.Close()
	// The trials plan apart: none picks a GPU that a sibling has planned.
	r.book = sweep.NewBook()
	r.opts = s.Probe
	return r.run(ctx)
}

// fleetOpts are the options of one more fleet over the sweep's shared
// connections: a Dialer of its own. A Dialer tells a fleet's first dial
// of a host from its redial (a suspect link, replaced for everyone); one
// Dialer shared by all fleets took every trial's first dial for a redial:
// a new SSH connection per trial and host, each a handshake made while
// the host's other dials waited (the burst's serialised starts,
// launcher/help/performance.md).
func (r *sweepRun) fleetOpts() probe.Options {
	o := r.opts
	o.Dial = r.shared.Dialer()
	return o
}

// openConsole: a foreground sweep's lines go to its console.log too
// (tfhive logs and attach read a sweep as they read a detached one). It
// returns the file to close, if any.
func (r *sweepRun) openConsole() *os.File {
	r.say = r.spec.Say
	var f *os.File
	if r.spec.Console {
		if c, err := rundir.OpenFile(filepath.Join(r.dir, rundir.Console), os.O_CREATE|os.O_WRONLY|os.O_APPEND); err == nil {
			f, r.console = c, c
			r.say = io.MultiWriter(r.say, c)
		}
	}
	r.say = &serialWriter{w: r.say}
	return f
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
