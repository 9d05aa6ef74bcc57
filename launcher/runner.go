package launcher

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/launcher/csvlog"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// Options is everything RunPlan needs: launcher/job fills them for each
// attempt of a run, from the command's options.
type Options struct {
	Plan *schedule.Plan
	// Hosts and Execs are indexed by host name: each task runs over its
	// host's existing connection.
	Hosts map[string]inventory.Host
	Execs map[string]remote.Executor
	// Env is --env: added to every task, over the hosts file's env.
	Env map[string]string
	// Workdir and Setup override the hosts file's when not empty.
	Workdir, Setup string
	LogDir         string
	Grace          time.Duration // the stop signal → SIGKILL
	// StopSignal is --stop-signal's name without SIG ("TERM", "INT"):
	// what every stop sends first; "" is TERM.
	StopSignal string
	Timeout    time.Duration // 0: none
	// KeepAlive gives a host's keepalive interval and count. tfhive tells
	// each supervisor it is alive at that interval; one that hears nothing
	// for interval × count takes the link as dead and stops its task, as
	// the client side drops a connection that stops answering keepalives.
	KeepAlive func(inventory.Host) (time.Duration, int)
	Parallel  int
	Console   *Console
	Quiet     bool
	// OnEvent, when set, is told each row of the run's events.csv as it
	// is written (--notify's subscriber, launcher/notify): it must not
	// block.
	OnEvent func(task, host, event, detail string)
	// HostsFrom, when set, says where the hosts came from when not from
	// the command line ("hosts from ./hosts.yaml"): the first line says it.
	HostsFrom string
	// KillNow, once closed (a second Ctrl-C), kills every task at once.
	// The first stop is RunPlan's context: see RunPlan.
	KillNow <-chan struct{}
	// Reconnect, when not zero, keeps the tasks beyond their sessions: a
	// host whose link drops is redialled (Redial) for this long before it
	// is lost, and its tasks followed again where their output stopped
	// (reconnect.go). Zero: a lost link loses its tasks at once, and a
	// supervisor stops its task when its session ends.
	Reconnect time.Duration
	// Redial opens a new connection to the named host, closing the old.
	Redial func(ctx context.Context, host string) (remote.Executor, error)
	// Unattended, when set, is how long the supervisors of a detached run
	// wait for a keeper before they stop their tasks (instead of
	// Reconnect plus the keepalive period).
	Unattended time.Duration
	// Adopted: the plan's tasks already run, started by another tfhive
	// (tfhive attach -H): nothing is started or claimed, every task is
	// followed from its first byte, and the lifecycle goes on from there.
	// Gen is this keeper's generation (1 for the run's own tfhive).
	Adopted bool
	Gen     int
	// Mark, for an adopted run with restarts, is its attempt lines' word,
	// and Attempts the attempt each task is at (AdoptedRestart): earlier
	// attempt lines, replayed from the task's first byte, are history.
	Mark     string
	Attempts map[string]int
	// Started, when set, is called once every task has been told to go
	// (not when the start failed).
	Started func()
	// Code is what --sync did, for the summary; nil without --sync. The
	// plan says where the tree is on each host: the tasks' default
	// workdir.
	Code *record.CodeReport
	// Command is the tasks' command line as given, for the summary; nil
	// when unknown (an adopted run).
	Command []string
	// Captures are --capture and --capture-from (capture.go); nil: none.
	Captures *Captures
	// Sample is --sample: how often the tasks' GPUs are sampled, on each
	// host by its multiplexer, or in a session of its own where the
	// tasks have a session each (sampler.go); 0: never.
	Sample time.Duration
	// Restart is --restarts and its policy (lifecycle.Restart); Max 0: none.
	Restart lifecycle.Restart
	// Relaunch, for a run started again on a new plan after a lost host
	// (lifecycle.Relaunch), is what it carries over: the local logs are
	// appended to, each task's attempts go on counting and the summary
	// lists the earlier ones. Nil for a run's first start.
	Relaunch *lifecycle.Relaunch
	// Hang is --hang-after and --on-hang (hang.go); After 0: never.
	Hang Hang
	// SeenTickets, for a plan made on an older probe (inventory.Inventory's
	// Seeded), are by host the pids of the holders of the waiting tickets
	// that probe saw: a supervisor ends, its claims given back and saying
	// so (supervisor.ClaimQueued), when a run began to wait on its host
	// since (supervisor.Task.Seeded). Nil: the plan's probe was its own,
	// no check.
	SeenTickets map[string][]int
	// Priority is --priority, which the tasks' claim holders carry.
	// Preemptible, for a low run, gives by host who may preempt it there
	// (its policy allows preempt_low: preempt.go); absent: nobody.
	Priority    string
	Preemptible map[string]string
	// Idle is, by host, the idle rule its supervisors hold the tasks to
	// (schedule.IdleRules: the policy, --idle-stop); absent: none there,
	// the GPUs' idle time is still measured for the usage ledger.
	Idle map[string]inventory.IdleRule
	// IdleStop is --idle-stop: the run's own idle stop, stricter than
	// the hosts' policies only (the job makes Idle of it); 0: none.
	IdleStop time.Duration
}

// DefaultReconnect is --reconnect's default: a laptop's lid closed for a
// coffee, a VPN that drops and comes back.
const DefaultReconnect = 5 * time.Minute

// DefaultUnattended is --unattended's default: a detached run whose
// keeper is gone is stopped after a day, so that a forgotten parameter
// server does not hold its GPU for ever.
const DefaultUnattended = 24 * time.Hour

// runTask is a task while it runs.
type runTask struct {
	t        schedule.Task
	res      record.TaskResult
	out      *TaskOutput
	log      *os.File
	proc     remote.Started
	startErr error
	ctl      chan<- ctlLine // to its host's writer: never blocking the loop
	started  time.Time
	// claim receives the supervisor's claim line ("" if it ended first);
	// claimed is closed then.
	claim     chan string
	claimed   chan struct{}
	claimOnce sync.Once

	// A kept task's (Options.Reconnect): the bytes of each stream
	// received so far, its current session's generation, whether that
	// session has passed its stdout marker and what it said before its
	// stderr marker, the last stop sent, and whether tfhive gave up on it.
	outN, errN  int64
	gen         int
	marked      atomic.Bool
	attachNoise supervisor.NoiseBuffer
	stopLine    string
	abandoned   bool
	// goSent: the go line was sent; a session lost before it is lost.
	goSent atomic.Bool
	// truncated: a session said the host's files could not take all of
	// the task's output.
	truncated atomic.Bool
	// With --restarts: the filter taking the attempt lines out of its
	// stdout (one for all its sessions: a line may be split between two),
	// and when its current attempt started.
	filter       *supervisor.AttemptFilter
	attemptStart time.Time
	restartLine  string // the last restart line sent
	// preempted: a session said a high run preempted the task.
	preempted supervisor.Preemption
}

func (rt *runTask) reportClaim(line string) {
	rt.claimOnce.Do(func() {
		rt.claim <- line
		close(rt.claimed)
	})
}

// claimTaken stands for a supervisor that ended with supervisor.ExitClaimBusy before
// saying its claims were held: a flock found one taken.
const claimTaken = "taken"

// claimAnswer names a supervisor's claim line for the policy: supervisor.ClaimOK,
// supervisor.ClaimBlocked+why, supervisor.ClaimFailed+why (not started), supervisor.ClaimQueued
// (a run queued since the plan's older probe), claimTaken (it ended
// with supervisor.ExitClaimBusy first), or anything else (it ended otherwise first).
func claimAnswer(line string) (lifecycle.ClaimAnswer, string) {
	switch {
	case line == supervisor.ClaimOK:
		return lifecycle.ClaimHeld, ""
	case line == claimTaken:
		return lifecycle.ClaimTaken, ""
	case line == supervisor.ClaimQueued:
		return lifecycle.ClaimQueued, ""
	case strings.HasPrefix(line, supervisor.ClaimBlocked):
		return lifecycle.ClaimBlocked, strings.TrimPrefix(line, supervisor.ClaimBlocked)
	case strings.HasPrefix(line, supervisor.ClaimFailed):
		return lifecycle.ClaimFailed, strings.TrimPrefix(line, supervisor.ClaimFailed)
	}
	return lifecycle.ClaimNone, ""
}

// Interrupt is the cause to cancel RunPlan's context with
// (context.WithCancelCause) when a signal stops the run, so that the
// summary names it and the exit code follows it: 143 for SIGTERM, 141
// (result stdout-closed) for StdoutClosed, 130 otherwise (as for a
// context cancelled without this cause).
func Interrupt(sig os.Signal) error { return &interruptError{sig} }

type interruptError struct{ sig os.Signal }

func (e *interruptError) Error() string {
	if e.sig == StdoutClosed || e.sig == Cancel {
		return e.sig.String()
	}
	return "interrupted by " + signalOf(e.sig).String()
}

// signalOf names the caller's signal for the policy.
func signalOf(sig os.Signal) lifecycle.Signal {
	switch sig {
	case nil:
		return lifecycle.SigNone
	case StdoutClosed:
		return lifecycle.SigStdoutClosed
	case Cancel:
		return lifecycle.SigCancelled
	case syscall.SIGTERM:
		return lifecycle.SigTerm
	}
	return lifecycle.SigInt
}

type exitEvent struct {
	i   int
	rc  int
	err error
	// For kept tasks: the connection the session ran on, whether the
	// task had been told to go when it ended, whether it was an attach
	// session and then whether it passed its marker.
	ex             remote.Executor
	afterGo        bool
	attach, marked bool
}

// RunPlan is the engine's one attempt of one plan: it starts every task
// of the plan, streams their output, decides success
// or failure, stops what is left and returns the summary. It returns an
// error only when it could not run at all (e.g. the log dir).
//
// Cancelling ctx stops the run as a signal would: SIGTERM to every task,
// SIGKILL after the grace period, result "interrupted" (see Interrupt);
// o.KillNow kills at once. Either, once the run is decided, kills at once.
func RunPlan(ctx context.Context, o Options) (*record.Summary, error) {
	return runWith(ctx, o, defaultLimits)
}

// limits are the run's fixed waits, which tests shorten, and the one way
// of starting tasks that only tests choose: no option of a run sets them
// (defaultLimits; an e2e build's tfhive may shorten idleFor: seams_e2e.go).
type limits struct {
	// minAnswer is the least time a supervisor is given to answer,
	// counted from its session's first byte.
	minAnswer time.Duration
	// login is how long a session may say nothing at all: its login
	// shell is still starting (supervisor.FirstByte).
	login time.Duration
	// giveUp is how long after SIGKILL (and the grace period) a task still
	// there is abandoned: its host stopped answering.
	giveUp time.Duration
	// idleFor is how long a task's GPUs must be idle to be warned about
	// (gpuusage.go).
	idleFor time.Duration
	// sessionPerTask starts a kept run's tasks in a session each, not
	// through their hosts' multiplexers (muxrun.go): for the tests whose
	// fake hosts script a session per task.
	sessionPerTask bool
}

var defaultLimits = limits{minAnswer: 10 * time.Second, login: 2 * time.Minute, giveUp: 5 * time.Second, idleFor: time.Minute}

func runWith(ctx context.Context, o Options, lim limits) (*record.Summary, error) {
	if err := rundir.Make(o.LogDir); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	if err := rundir.WriteFile(filepath.Join(o.LogDir, rundir.Plan), func(w io.Writer) error { return view.WritePlanJSON(w, o.Plan) }); err != nil {
		return nil, err
	}
	r := &runner{o: o, lim: lim, p: lifecycle.New(o.Plan, o.Restart), events: make(chan exitEvent, len(o.Plan.Tasks)), start: time.Now(), mark: rand.Text()}
	if o.Relaunch != nil {
		r.start = o.Relaunch.Started
	}
	if o.Restart.Max > 0 && o.Adopted && o.Mark != "" {
		r.mark = o.Mark
	}
	if o.Captures != nil && len(o.Captures.List) > 0 {
		r.series = csvlog.NewMetrics(filepath.Join(o.LogDir, rundir.Metrics), o.Relaunch != nil)
	}
	r.timeline = csvlog.NewEvents(filepath.Join(o.LogDir, rundir.Events), o.Relaunch != nil)
	r.timeline.Subscribe(o.OnEvent)
	r.noteResumed()
	sum := r.run(ctx)
	r.timeline.Close()
	if err := r.p.Conflict(); err != nil {
		return nil, err
	}
	if err := rundir.WriteJSON(filepath.Join(o.LogDir, rundir.Summary), sum); err != nil {
		return sum, &record.RecordError{Result: sum.Result, Err: err}
	}
	return sum, nil
}

// runner carries out the policy's decisions: it starts the tasks, turns
// what happens into events and sends the control lines.
type runner struct {
	o      Options
	lim    limits
	p      *lifecycle.Policy
	tasks  []*runTask
	events chan exitEvent
	// notFoundSaid: the not-found hint was said (once a run).
	notFoundSaid bool
	start        time.Time

	killAt   <-chan time.Time
	giveUpAt <-chan time.Time
	killed   bool       // the caller asked to kill at once
	links    *linkState // a kept run's links; nil otherwise
	// mark is this tfhive's random word for its kept tasks' truncation
	// lines (supervisor.TruncatedMarker).
	mark string
	// series is --capture's metrics.csv (csvlog.Metrics), nil without;
	// timeline the run's events.csv (csvlog.Events, timeline.go).
	series   *csvlog.Metrics
	timeline *csvlog.Events
	// usage and samplers are --sample's (sampler.go); nil without.
	usage    *usageBook
	samplers map[string]*sampler
	// muxes are the hosts' multiplexers (muxrun.go), for the samplers'
	// first start; nil for a run whose tasks have a session each.
	muxes map[string]*hostMux
	// With --restarts: attempt ends from the tasks' stdout filters, and
	// the policy's delayed events (backoffs), until quit is closed.
	// hang is --hang-after's clock (hang.go); nil without.
	hang        *hangWatch
	attemptEnds chan attemptEnd
	later       chan lifecycle.Event
	quit        chan struct{}
}

// attemptEnd is an attempt line of task i.
type attemptEnd struct{ i, attempt, rc int }

func (r *runner) run(ctx context.Context) *record.Summary {
	// One control-line writer per host, not per task: a goroutine's stack
	// per task is memory at hundreds of tasks, and a host whose link
	// blocks blocks all its tasks' lines anyway.
	perHost := map[string]int{}
	for _, t := range r.o.Plan.Tasks {
		perHost[t.Host]++
	}
	writers := map[string]chan ctlLine{}
	for host, n := range perHost {
		q := make(chan ctlLine, 16*n)
		writers[host] = q
		go writeCtl(q)
	}
	defer func() {
		for _, q := range writers {
			close(q)
		}
	}()
	r.attemptEnds, r.later, r.quit = make(chan attemptEnd, len(r.o.Plan.Tasks)), make(chan lifecycle.Event, len(r.o.Plan.Tasks)), make(chan struct{})
	defer close(r.quit)
	for _, t := range r.o.Plan.Tasks {
		r.tasks = append(r.tasks, &runTask{t: t, ctl: writers[t.Host], claim: make(chan string, 1), claimed: make(chan struct{}), res: record.TaskResult{
			ID: t.ID, Role: t.Role, Index: t.Index, Host: t.Host, Address: t.Address, GPUs: t.GPUs,
			Log: filepath.Join(r.o.LogDir, rundir.TaskLogOf(t.Role, t.Index)),
		}})
		r.p.SetAttempt(len(r.tasks)-1, r.o.Relaunch.FirstAttempt(t.ID))
		r.hearIdle(len(r.tasks) - 1)
	}
	var back <-chan hostBack
	var ready <-chan attached
	var replaced <-chan string
	if r.o.Reconnect > 0 && r.o.Redial != nil {
		r.links = newLinkState(r.o.Execs, len(writers))
		back, ready, replaced = r.links.back, r.links.ready, r.links.replaced
		defer close(r.links.stop)
	}
	if r.o.Adopted && r.links != nil {
		r.adoptAll()
	} else {
		r.startAll(ctx)
	}
	if !r.p.Decided() {
		r.startSamplers()
	}
	if !r.p.Decided() && !r.o.Adopted {
		from := ""
		if r.o.HostsFrom != "" {
			from = " (" + r.o.HostsFrom + ")"
		}
		r.o.Console.Printf("tfhive: run %s: %s on %s%s, logs in %s", r.o.Plan.RunID, wording.Count(len(r.tasks), "task"), wording.Count(len(r.o.Plan.Hosts()), "host"), from, r.o.LogDir)
	}
	// Started after the run's first line: a detached run's tfhive returns
	// on it, and its console must already say what started (the keeper's
	// Started flushes it; CI: TestUserHostsFile read the console first).
	if !r.p.Decided() && r.o.Started != nil {
		r.o.Started()
	}

	heartbeat := time.NewTicker(r.heartbeatInterval())
	defer heartbeat.Stop()
	var timeout <-chan time.Time
	if r.o.Timeout > 0 {
		t := time.NewTimer(r.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	done, killNow := ctx.Done(), r.o.KillNow
	metricsTick, stopMetrics := r.metricsTicker()
	defer stopMetrics()
	var metrics map[string]string // the live metrics last written
	hangTick, hangResults, stopHang := r.hangTicker()
	defer stopHang()
	for r.p.Running() > 0 {
		select {
		case <-hangTick:
			r.checkHang()
		case hs := <-hangResults:
			r.hangTaken(hs)
		case <-metricsTick:
			metrics = r.writeLiveMetrics(metrics)
		case ev := <-r.events:
			if ev.err != nil && r.sessionLost(ev) {
				break
			}
			if ev.attach && ev.err == nil && !ev.marked && r.p.State(ev.i).Phase == lifecycle.PhaseStarted {
				why := r.tasks[ev.i].attachFailed()
				if strings.HasPrefix(why, "replaced by keeper generation") {
					r.stepDown(why)
					break
				}
				ev.err = errors.New(why)
			}
			r.tasks[ev.i].res.Duration = time.Since(r.tasks[ev.i].started)
			if ev.err != nil {
				r.apply(lifecycle.Event{Kind: lifecycle.EvLost, Task: ev.i, Err: ev.err.Error()})
			} else {
				r.sayNotFoundHint(ev.i, ev.rc)
				r.apply(lifecycle.Event{Kind: lifecycle.EvExited, Task: ev.i, Code: ev.rc, Signalled: r.tasks[ev.i].preempted.Signalled()})
			}
		case a := <-r.attemptEnds:
			rt := r.tasks[a.i]
			if a.attempt == r.p.State(a.i).Attempt {
				r.apply(lifecycle.Event{Kind: lifecycle.EvAttemptEnd, Task: a.i, Code: a.rc, After: time.Since(rt.attemptStart)})
			}
		case ev := <-r.later:
			r.apply(ev)
		case b := <-back:
			r.hostBack(b)
		case a := <-ready:
			r.attachedTo(a)
		case why := <-replaced:
			replaced = nil
			r.stepDown(why)
		case <-heartbeat.C:
			for _, i := range r.p.Live() {
				r.tasks[i].send(supervisor.CtlHeartbeat)
			}
			r.holdIdle(r.p.Live())
		case <-timeout:
			timeout = nil
			r.apply(lifecycle.Event{Kind: lifecycle.EvTimeout, After: r.o.Timeout})
		case <-done:
			done = nil
			r.apply(interrupted(ctx))
		case <-killNow:
			killNow = nil
			r.killed = true
			if done != nil && ctx.Err() != nil {
				// Both came before the loop looked: the first is the
				// one that names the signal.
				done = nil
				r.apply(interrupted(ctx))
			}
			r.apply(lifecycle.Event{Kind: lifecycle.EvKillNow})
		case <-r.killAt:
			r.killAt = nil
			r.apply(lifecycle.Event{Kind: lifecycle.EvGraceOver})
		case <-r.giveUpAt:
			r.giveUpAt = nil
			r.apply(lifecycle.Event{Kind: lifecycle.EvGiveUp})
		}
	}
	for _, rt := range r.tasks {
		if rt.out != nil {
			rt.out.Close()
			rt.log.Close()
		}
	}
	r.endHang()
	r.series.Close()
	r.stopSamplers()
	return r.summary()
}

// interrupted is the event for a cancelled ctx, with the signal its cause
// names.
func interrupted(ctx context.Context) lifecycle.Event {
	ev := lifecycle.Event{Kind: lifecycle.EvInterrupt}
	var ie *interruptError
	if errors.As(context.Cause(ctx), &ie) {
		ev.Sig = signalOf(ie.sig)
	}
	return ev
}

// ctlLines spells the policy's control lines on the wire.
var ctlLines = map[lifecycle.Control]string{
	lifecycle.CtlGo:    supervisor.CtlGo,
	lifecycle.CtlAbort: supervisor.CtlAbort,
	lifecycle.CtlTerm:  supervisor.CtlTerm,
	lifecycle.CtlKill:  supervisor.CtlKill,
}

// apply feeds ev to the policy and carries out its decision.
func (r *runner) apply(ev lifecycle.Event) {
	d := r.p.Apply(ev)
	r.noteEvent(ev, d)
	for _, line := range d.Say {
		r.o.Console.Printf("%s", line)
	}
	for _, i := range d.To {
		rt := r.tasks[i]
		line := ctlLines[d.Send]
		switch d.Send {
		case lifecycle.CtlGo:
			rt.goSent.Store(true)
		case lifecycle.CtlTerm, lifecycle.CtlKill:
			// A group restart's stop is for the attempt under way only: a
			// new session must not repeat it to the next one.
			if r.p.Decided() {
				rt.stopLine = line
			}
		}
		rt.send(line)
	}
	for _, i := range d.Abandon {
		if r.links != nil && r.links.redo[r.tasks[i].t.Host] != nil {
			// Its host is being redialled: the stop goes to it once it is
			// back, unless the caller insisted.
			if !r.killed {
				continue
			}
			r.lost(i, "abandoned while reconnecting")
			continue
		}
		r.tasks[i].abandoned = true
		r.tasks[i].proc.Close()
	}
	for _, i := range d.Ends {
		r.tasks[i].stopLine = supervisor.CtlEnd
		r.tasks[i].send(supervisor.CtlEnd)
	}
	for _, i := range d.Restart {
		rt := r.tasks[i]
		r.hang.heard()
		rt.attemptStart = time.Now()
		rt.restartLine = supervisor.RestartLine(r.p.State(i).Attempt)
		rt.send(rt.restartLine)
	}
	for _, l := range d.Later {
		r.after(l.After, l.Event)
	}
	if d.ArmRegroupKill {
		r.after(r.o.Grace, lifecycle.Event{Kind: lifecycle.EvRegroupKill})
	}
	if d.ArmKill {
		r.killAt = time.After(r.o.Grace)
	}
	if d.ArmGiveUp {
		r.killAt = nil
		r.giveUpAt = time.After(r.o.Grace + r.lim.giveUp)
	}
}

// startAll starts every task, in parallel but bounded, each over its
// host's connection, and waits for every supervisor's claim line: the
// policy then says go, or abort. A task that cannot start fails the run.
func (r *runner) startAll(ctx context.Context) {
	// The run stops its tasks itself when ctx ends: a start under way
	// goes on, to be stopped like the others.
	ctx = context.WithoutCancel(ctx)
	if r.muxed() {
		r.startMuxed(ctx)
	} else {
		var g errgroup.Group
		g.SetLimit(max(r.o.Parallel, 1))
		for i, rt := range r.tasks {
			g.Go(func() error {
				rt.startErr = r.startOne(ctx, i, rt)
				return nil
			})
		}
		g.Wait()
	}
	for i, rt := range r.tasks {
		if rt.startErr != nil {
			r.apply(lifecycle.Event{Kind: lifecycle.EvNotStarted, Task: i, Err: rt.startErr.Error()})
		} else {
			r.apply(lifecycle.Event{Kind: lifecycle.EvStarted, Task: i})
		}
	}
	for i, rt := range r.tasks {
		if rt.startErr == nil {
			answer, why := claimAnswer(<-rt.claim)
			r.apply(lifecycle.Event{Kind: lifecycle.EvClaim, Task: i, Claim: answer, Err: why})
		}
	}
}

func (r *runner) startOne(ctx context.Context, i int, rt *runTask) error {
	ex := r.o.Execs[rt.t.Host]
	if ex == nil {
		return fmt.Errorf("no connection to %s", rt.t.Host)
	}
	if err := r.openOutput(rt); err != nil {
		return err
	}
	tk := r.taskFor(rt.t)
	tk.Mark = r.mark
	var stdout, stderr io.Writer = rt.out.Stdout(), rt.out.Stderr()
	if tk.Restarts {
		rt.filter = r.attemptFilter(i, stdout)
		stdout = rt.filter
		tk.FirstAttempt = r.p.State(i).Attempt
	}
	var errGate *supervisor.StreamGate
	tap := r.preemptTap(stderr, &rt.preempted)
	stderr = tap
	if tk.Keep > 0 {
		stdout = &supervisor.StreamGate{Next: stdout, Noise: stdout, N: &rt.outN}
		errGate = &supervisor.StreamGate{Next: stderr, Noise: stderr, N: &rt.errN, Replaced: r.links.sayReplaced,
			End: r.endLine(), Truncated: &rt.truncated}
		stderr = errGate
		if r.firstOnHost(i) {
			tk.RunInfo = runInfoOf(r.o.Plan, r.o.Restart, r.mark)
		}
	}
	said := supervisor.NewFirstByte()
	gate := said.Writer(&supervisor.ClaimGate{Next: stdout, Report: rt.reportClaim})
	stderr = said.Writer(stderr)
	proc, err := startFed(ctx, ex, gate, stderr, supervisor.Input(tk), "sending the task")
	if err != nil {
		return err
	}
	rt.proc = proc
	said.LoggedIn(proc)
	r.watch(i, rt, proc, said, tap, errGate, tk.HeartbeatTimeout, ex)
	return nil
}

// openOutput opens a task's log and console output and starts its clock.
func (r *runner) openOutput(rt *runTask) error {
	mode := os.O_TRUNC
	if r.o.Relaunch != nil {
		// The earlier attempts' output stays, as a restart's does.
		mode = os.O_APPEND
	}
	logf, err := rundir.OpenFile(rt.res.Log, os.O_CREATE|os.O_WRONLY|mode)
	if err != nil {
		return err
	}
	rt.log = logf
	rt.out = r.o.Console.Task(rt.t.ID+" "+rt.t.Host, logf, r.o.Quiet)
	rt.out.captureInto(r.o.Captures, rt.t.ID, r.series)
	rt.started = time.Now()
	rt.attemptStart = rt.started
	return nil
}

// startFed starts supervisor.Command on ex and sends it input. The probe's
// spare session, handed over, may have ended between the probe and now
// (it was checked, but not held still): it never got the input, so
// nothing was claimed. One fresh session, once; Wait first, so that the
// old one writes nothing more into the output. The fresh session's
// errors say what was being sent.
func startFed(ctx context.Context, ex remote.Executor, stdout, stderr io.Writer, input, what string) (remote.Started, error) {
	proc, err := ex.Start(ctx, supervisor.Command, stdout, stderr)
	if err != nil {
		return nil, err
	}
	if err := supervisor.WriteChunked(proc.Stdin(), input); err == nil {
		return proc, nil
	}
	proc.Close()
	proc.Wait()
	if proc, err = ex.Start(ctx, supervisor.Command, stdout, stderr); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := supervisor.WriteChunked(proc.Stdin(), input); err != nil {
		proc.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return proc, nil
}

// watch gives task i's supervisor, started, its time to answer, and turns
// its end into an event.
func (r *runner) watch(i int, rt *runTask, proc remote.Started, said *supervisor.FirstByte, tap *supervisor.PreemptTap, errGate *supervisor.StreamGate, heartbeat time.Duration, ex remote.Executor) {
	// The supervisor answers within a round trip or two of its login
	// shell's start. A host that never does must not hold the whole run
	// at the claim phase: after the watchdog's own period it is lost —
	// but never before minAnswer. The clock starts at the session's first
	// byte: a login shell that runs conda's init on a host busy with
	// many logins takes its time while the host and link are fine, and
	// until it has started nothing can answer. A session that says
	// nothing at all is given the login limit (a login shell hung on an
	// NFS home).
	answerWithin := max(heartbeat, r.lim.minAnswer)
	var silentFor atomic.Int64
	go func() {
		if d := said.Wait(rt.claimed, max(answerWithin, r.lim.login), answerWithin); d > 0 {
			silentFor.Store(int64(d))
			proc.Kill()
		}
	}()
	go func() {
		rc, err := proc.Wait()
		if d := silentFor.Load(); d > 0 {
			err = fmt.Errorf("no answer from the host within %s", time.Duration(d))
		}
		tap.Flush()
		if err == nil && errGate != nil {
			errGate.Flush()
		}
		if err == nil && rt.filter != nil {
			rt.filter.Flush()
		}
		if err == nil && rc == supervisor.ExitClaimBusy {
			rt.reportClaim(claimTaken)
		}
		rt.reportClaim("")
		r.events <- exitEvent{i: i, rc: rc, err: err, ex: ex, afterGo: rt.goSent.Load()}
	}()
}

// taskFor merges the environment: hosts file env < --env < tfhive's own
// (TF_CONFIG and friends must be what the plan says). The workdir is
// --workdir, else the --sync tree's directory, else the hosts file's.
func (r *runner) taskFor(t schedule.Task) supervisor.Task {
	h := r.o.Hosts[t.Host]
	env := map[string]string{"PYTHONUNBUFFERED": "1"}
	for _, m := range []map[string]string{h.Env, r.o.Env, t.Env} {
		for k, v := range m {
			env[k] = v
		}
	}
	r.resumeEnv(env, t) // stopenv.go
	wd, setup := h.Workdir, h.Setup
	if d := r.o.Plan.Code.Dir(t.Host); d != "" {
		wd = d
	}
	if r.o.Workdir != "" {
		wd = r.o.Workdir
	}
	if r.o.Setup != "" {
		setup = r.o.Setup
	}
	every, count := r.o.KeepAlive(h)
	tk := supervisor.Task{Env: env, Workdir: wd, Setup: setup, Argv: t.Argv, HeartbeatTimeout: every * time.Duration(count),
		Claims: lifecycle.Claims(t), RunID: r.o.Plan.RunID, ID: t.ID, Restarts: r.o.Restart.Max > 0,
		Priority: r.o.Priority, Preempt: r.o.Preemptible[t.Host], Grace: r.o.Grace, StopSignal: r.o.StopSignal}
	r.idleTask(&tk, t)
	if r.o.SeenTickets != nil {
		tk.Seeded, tk.SeenTickets = true, r.o.SeenTickets[t.Host]
	}
	if rl := r.o.Relaunch; rl != nil {
		tk.Requeued = rl.Requeues // ps and top: "resumed (attempt 2)"
	}
	if r.o.Reconnect > 0 && r.o.Redial != nil {
		// The supervisor waits for the link as long as tfhive redials it,
		// counted from when tfhive would notice it gone.
		tk.Keep = r.o.Reconnect + tk.HeartbeatTimeout
		if r.o.Unattended > 0 {
			// A detached run: its keeper may be replaced (tfhive attach
			// from anywhere) for this long.
			tk.Keep = max(r.o.Unattended, tk.HeartbeatTimeout)
		}
	}
	return tk
}

// heartbeatInterval is the shortest keepalive interval among the hosts.
func (r *runner) heartbeatInterval() time.Duration {
	var min time.Duration
	for _, rt := range r.tasks {
		if every, _ := r.o.KeepAlive(r.o.Hosts[rt.t.Host]); min == 0 || every < min {
			min = every
		}
	}
	if min <= 0 {
		min = 15 * time.Second
	}
	return min
}

func (rt *runTask) send(line string) {
	if rt.proc == nil {
		return // adopted, and not attached yet
	}
	select {
	case rt.ctl <- ctlLine{rt.proc, line}:
	default: // the host's link is stuck; heartbeats may be dropped
	}
}

// ctlLine is a control line for one task's supervisor.
type ctlLine struct {
	proc remote.Started
	line string
}

// writeCtl writes one host's control lines until q is closed. A failed
// write means that task is gone; its exit event says so.
func writeCtl(q <-chan ctlLine) {
	for m := range q {
		io.WriteString(m.proc.Stdin(), m.line)
	}
}

func (r *runner) summary() *record.Summary {
	result, code, reason, decider := r.p.Final()
	s := &record.Summary{RunID: r.o.Plan.RunID, Result: result, ExitCode: code, Reason: reason,
		LogDir: r.o.LogDir, Started: r.start, Duration: time.Since(r.start), Code: r.o.Code, Command: r.o.Command}
	for i, rt := range r.tasks {
		st := r.p.State(i)
		rt.res.Outcome, rt.res.ExitCode, rt.res.Error = st.Outcome, st.Code, st.Err
		rt.res.LogTruncated = rt.truncated.Load()
		if rt.out != nil {
			rt.res.Metrics = rt.out.Metrics()
		}
		if r.usage != nil {
			rt.res.GPUUsage = r.usage.usage(i)
			rt.res.Intruders = r.usage.intrudersOf(i)
		}
		if r.o.Restart.Max > 0 || r.o.Relaunch != nil {
			// A relaunched or requeued run lists the attempts before it too.
			rt.res.Attempts = r.attemptsOf(i)
		}
	}
	r.cancelledSummary(s, decider)
	r.preemptedSummary(s)
	r.idleStoppedSummary(s)
	if decider >= 0 {
		d := r.tasks[decider]
		if result == record.ResultFailed && d.out != nil {
			d.res.LastLines = d.out.LastErrLines()
		}
		s.Tasks = append(s.Tasks, d.res)
	}
	for i, rt := range r.tasks {
		if i != decider {
			s.Tasks = append(s.Tasks, rt.res)
		}
	}
	if c := r.o.Captures; c != nil && len(c.List) > 0 {
		s.Captures, s.Metrics = c.Regexes(), RunMetrics(s.Tasks, decider >= 0)
	}
	return s
}

func intPtr(n int) *int { return &n }

// sayNotFoundHint says, once a run, what may help when task i exited
// 127 because its command or script is not on its host (notFoundHint).
func (r *runner) sayNotFoundHint(i, code int) {
	rt := r.tasks[i]
	if r.notFoundSaid || rt.out == nil || code != 127 {
		return
	}
	if hint := notFoundHint(code, rt.out.LastErrLines(), r.o.Plan.Code != nil); hint != "" {
		r.notFoundSaid = true
		r.o.Console.Printf("%s", hint)
	}
}
