package lifecycle

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
)

// The run's lifecycle is a pure function of what happens to it. The
// runner (launcher/runner.go) turns what its supervisors, its clock and its
// caller do into events, hands them to Policy.Apply one at a time, and
// carries out each decision: control lines, timers, console lines. Nothing here starts,
// signals, waits or reads a clock, so that every rule is table-tested
// without hosts or timers (policy_test.go).

// EventKind says what happened.
type EventKind int

const (
	EvStarted     EventKind = iota // the task's supervisor runs; its claim line is to come
	EvNotStarted                   // the task could not start (Err)
	EvClaim                        // the task's supervisor answered the claim phase (Claim)
	EvExited                       // the task ended with status code (128+N for signal N)
	EvLost                         // the task's host or connection was lost (Err)
	EvInterrupt                    // the caller stopped the run (Sig: which signal, SigNone if unnamed)
	EvKillNow                      // the caller asked again: kill at once
	EvTimeout                      // the run's --timeout (After) passed
	EvGraceOver                    // the grace period after SIGTERM passed
	EvGiveUp                       // killed, and still not gone a while later
	EvSteppedDown                  // another keeper adopted the run (Err: which)
	// Restarts (restart.go): an attempt of the task ended with Code after
	// running for After; the backoff before a restart passed (task -1: the
	// group's); the grace period of a group restart's SIGTERM passed.
	EvAttemptEnd
	EvBackoffOver
	EvRegroupKill
	// EvHung: no task printed anything for After, and --on-hang stop
	// (hang.go).
	EvHung
)

// Event is one thing that happened to the run.
type Event struct {
	Kind EventKind
	Task int
	Code int
	Err  string
	// Claim is the supervisor's answer to the claim phase; Err says why
	// when it is ClaimBlocked or ClaimFailed.
	Claim ClaimAnswer
	Sig   Signal
	After time.Duration
	// Signalled (EvExited): the task's supervisor passed tfhive's stop
	// ("t" or "k") on to the task while it ran. A task tfhive asked to
	// stop that ended without it ended on its own (it failed at the same
	// moment as the task that decided the run): its own end, not
	// "stopped".
	Signalled bool
}

// ClaimAnswer is what a supervisor answered to the claim phase: the
// runner reads its first line off the wire and names it here.
type ClaimAnswer int

const (
	// ClaimNone: the supervisor ended before answering, for another
	// reason than a claim taken.
	ClaimNone    ClaimAnswer = iota
	ClaimHeld                // its claims are held
	ClaimBlocked             // a lock file cannot be used (err: why)
	ClaimFailed              // a kept task cannot have its files on the host (err: why): not started
	ClaimTaken               // it ended on a claim someone else holds
	ClaimQueued              // planned on an older probe, it met a run queued since
)

// Signal is what stopped the run from outside (EvInterrupt): the runner
// names the caller's os.Signal here, so that the policy needs no
// operating system's signals.
type Signal int

const (
	SigNone         Signal = iota // the caller's context ended without naming a signal
	SigInt                        // SIGINT, or any signal but SIGTERM
	SigTerm                       // SIGTERM
	SigStdoutClosed               // tfhive's stdout closed (a pipe reader such as head ended)
	SigCancelled                  // tfhive kill of the sweep the run is a trial of
)

// StdoutClosedReason is the run's reason when its stdout closed.
const StdoutClosedReason = "standard output closed (a pipe reader such as head ended)"

// String names the signal in a reason: "SIGTERM"; any other reads as
// SIGINT (Ctrl-C, what an unnamed stop stands for).
func (s Signal) String() string {
	switch s {
	case SigTerm:
		return "SIGTERM"
	case SigStdoutClosed:
		return StdoutClosedReason
	case SigCancelled:
		return CancelledReason
	}
	return "SIGINT"
}

// Control is a control line the runner sends to supervisors; the host
// protocol (launcher/supervisor) spells it.
type Control int

const (
	CtlNone  Control = iota // nothing to send
	CtlGo                   // claims are all held: start the task
	CtlAbort                // another task could not claim: give up
	CtlTerm                 // SIGTERM the task
	CtlKill                 // SIGKILL the task
)

// Decision is what the runner must do after an event.
type Decision struct {
	Say []string // tfhive's console lines, in order
	// Send is a control line (CtlGo, CtlAbort, CtlTerm, CtlKill) for the
	// supervisors of the tasks in To.
	Send Control
	To   []int
	// Abandon: drop these tasks' connections, they do not go away.
	Abandon []int
	// ArmKill: SIGKILL what is left once the grace period has passed.
	// ArmGiveUp: abandon what is left a while after SIGKILL; it replaces
	// ArmKill's timer. Neither when nothing is left.
	ArmKill, ArmGiveUp bool
	// Restarts: Ends are told to end (they are between attempts),
	// Restart to start their next attempt now; Later are events the
	// runner feeds back after their wait (backoffs); ArmRegroupKill:
	// EvRegroupKill after the grace period.
	Ends, Restart  []int
	Later          []Delayed
	ArmRegroupKill bool
}

// Delayed is an event due after a wait.
type Delayed struct {
	After time.Duration
	Event Event
}

// Phase is where a task is in its life.
type Phase int

const (
	PhaseNew     Phase = iota // not started yet
	PhaseStarted              // its supervisor runs (claiming, or running the task)
	PhaseDone                 // ended, or never started
)

// TaskState is what the policy knows of one task.
type TaskState struct {
	Phase   Phase
	claimed bool        // its claim line (or start failure) is in
	claim   ClaimAnswer // its claim line
	why     string      // why it is ClaimBlocked
	stopped bool        // tfhive asked it to stop: ending is then no failure
	Outcome string      // record.OutcomeExited etc., once done
	Code    *int        // its status, nil when unknown
	Err     string
	// Restarts: the current attempt (TFHIVE_ATTEMPT), whether it has
	// ended and the supervisor waits for "r" or "e", whether a restart of
	// its own waits for its backoff, and the attempts that ended.
	Attempt  int
	between  bool
	backoff  bool
	Attempts []record.Attempt
}

// Policy holds a run's state between events.
type Policy struct {
	rule  SuccessRule
	tasks []schedule.Task
	state []TaskState
	// waiting counts the tasks whose claim line (or start failure) is still
	// to come: the tasks get go only once none is.
	waiting int
	// went: the tasks were told to go (or were adopted running).
	went bool

	result, reason string
	code           int
	decider        int   // the task that decided the result, -1 none
	conflict       error // a claim was taken or blocked: nothing ran

	// restart is the run's restart policy; alone says which tasks restart
	// by themselves (the others restart with every task); regroup, while
	// a group restart is under way, lists its tasks, regroupWait the
	// backoff it takes once all have ended.
	restart     Restart
	alone       func(i int) bool
	regroup     []int
	regroupWhy  string
	regroupWait time.Duration
	// regroupArmed: the group's backoff is under way.
	regroupArmed bool
}

// Adopted records that every task already runs, started and told to go
// by another tfhive: the run's lifecycle goes on from there.
func (p *Policy) Adopted() {
	for i := range p.state {
		p.state[i] = TaskState{Phase: PhaseStarted, claimed: true, claim: ClaimHeld}
	}
	p.waiting = 0
	p.went = true
}

// New is the lifecycle of a run of p, restarting its tasks under
// rs.
func New(p *schedule.Plan, rs Restart) *Policy {
	return &Policy{rule: RuleOf(p), tasks: p.Tasks, state: make([]TaskState, len(p.Tasks)),
		waiting: len(p.Tasks), decider: -1, alone: aloneOf(p), restart: rs}
}

// State is what the policy knows of task i.
func (p *Policy) State(i int) TaskState { return p.state[i] }

// SetAttempt makes n task i's current attempt: an adopted run's, or one
// started again after a lost host (Relaunch).
func (p *Policy) SetAttempt(i, n int) { p.state[i].Attempt = n }

// Conflict is why nothing ran when a claim was taken or blocked, or a
// run queued since the plan's probe (ClaimConflictError,
// ClaimBlockedError, QueuedSinceError); nil otherwise.
func (p *Policy) Conflict() error { return p.conflict }

// aloneOf says which tasks restart by themselves: with TensorFlow, an
// evaluator, and a worker when there are parameter servers
// (ParameterServerStrategy's coordinator, and TF1's between-graph
// replication, take a worker back). Everything else restarts every task:
// a ps or chief holds the others' state, and collectives (torch,
// MultiWorkerMirroredStrategy) need the whole world to start again.
func aloneOf(p *schedule.Plan) func(int) bool {
	// The tasks, not the cluster: an adopted run's plan has no cluster.
	ps := slices.ContainsFunc(p.Tasks, func(t schedule.Task) bool { return t.Role == schedule.RolePS })
	return func(i int) bool {
		if p.Torch() {
			return false
		}
		switch p.Tasks[i].Role {
		case schedule.RoleEvaluator:
			return true
		case schedule.RoleWorker:
			return ps
		}
		return false
	}
}

// Apply takes one event and says what to do about it.
func (p *Policy) Apply(ev Event) Decision {
	var d Decision
	switch ev.Kind {
	case EvStarted:
		p.state[ev.Task].Phase = PhaseStarted
	case EvNotStarted:
		s := &p.state[ev.Task]
		s.Phase, s.Outcome, s.Err = PhaseDone, record.OutcomeNoStart, ev.Err
		p.claimIn(ev.Task, ClaimNone, "", &d)
	case EvClaim:
		if ev.Claim == ClaimFailed && !p.state[ev.Task].claimed {
			s := &p.state[ev.Task]
			s.Phase, s.Outcome, s.Err = PhaseDone, record.OutcomeNoStart, ev.Err
		}
		p.claimIn(ev.Task, ev.Claim, ev.Err, &d)
	case EvExited, EvLost:
		p.exited(ev, &d)
	case EvInterrupt:
		if p.Decided() {
			// Already stopping: asking again kills at once. A closed
			// stdout asks nothing: the run stops as it was stopping.
			if ev.Sig != SigStdoutClosed {
				p.killNow(&d)
			}
			break
		}
		if ev.Sig == SigStdoutClosed {
			p.decide(&d, record.ResultStdoutClosed, record.ExitStdoutClosed, -1, StdoutClosedReason)
			break
		}
		if ev.Sig == SigCancelled {
			p.decide(&d, record.ResultCancelled, record.ExitCancelled, -1, CancelledReason)
			break
		}
		code, reason := 130, "interrupted"
		if ev.Sig != SigNone {
			reason += " by " + ev.Sig.String()
			if ev.Sig == SigTerm {
				code = 143
			}
		}
		p.decide(&d, record.ResultInterrupted, code, -1, reason)
	case EvKillNow:
		if !p.Decided() {
			p.decide(&d, record.ResultInterrupted, 130, -1, "interrupted")
		}
		p.killNow(&d)
	case EvTimeout:
		p.decide(&d, record.ResultTimeout, record.ExitTimeout, -1, fmt.Sprintf("timed out after %s", ev.After))
	case EvHung:
		p.hung(ev, &d)
	case EvGraceOver:
		p.kill(&d)
	case EvGiveUp:
		d.Abandon = p.Live()
	case EvAttemptEnd:
		p.attemptEnded(ev, &d)
	case EvBackoffOver:
		p.backoffOver(ev.Task, &d)
	case EvRegroupKill:
		if p.regroup != nil && !p.Decided() {
			for _, i := range p.regroup {
				if s := p.state[i]; s.Phase == PhaseStarted && !s.between {
					d.To = append(d.To, i)
				}
			}
			d.Send = CtlKill
		}
	case EvSteppedDown:
		// Nothing is stopped: the tasks are the other keeper's now.
		if p.result != record.ResultSteppedDown {
			p.result, p.code, p.decider, p.reason = record.ResultSteppedDown, 1, -1, ev.Err
		}
		for _, i := range p.Live() {
			s := &p.state[i]
			s.Phase, s.Outcome = PhaseDone, record.OutcomeHandedOver
			d.Abandon = append(d.Abandon, i)
		}
	}
	return d
}

// Decided: the run's result is fixed (or it never ran), what is left is
// being stopped.
func (p *Policy) Decided() bool { return p.result != "" || p.conflict != nil }

// Live lists the tasks whose supervisors still run.
func (p *Policy) Live() []int {
	var l []int
	for i, s := range p.state {
		if s.Phase == PhaseStarted {
			l = append(l, i)
		}
	}
	return l
}

// Running counts the tasks whose end is still to come.
func (p *Policy) Running() int { return len(p.Live()) }

// claimIn records one task's answer to the claim phase; the last one ends
// the phase. Two phases: every supervisor holds its claims before any task
// starts, so two runs racing for the same GPUs never both start.
func (p *Policy) claimIn(i int, claim ClaimAnswer, why string, d *Decision) {
	s := &p.state[i]
	if s.claimed {
		return
	}
	s.claimed, s.claim, s.why = true, claim, why
	if p.waiting--; p.waiting > 0 {
		return
	}
	var conflicts, blocked, queued []string
	for i, s := range p.state {
		t := p.tasks[i]
		switch {
		case s.Outcome == record.OutcomeNoStart:
		case s.claim == ClaimTaken:
			conflicts = append(conflicts, fmt.Sprintf("%s %s", t.Host, describeClaims(Claims(t))))
		case s.claim == ClaimBlocked:
			blocked = append(blocked, t.Host+": "+s.why)
		case s.claim == ClaimQueued && !slices.Contains(queued, t.Host):
			queued = append(queued, t.Host)
		}
	}
	for i, s := range p.state {
		if s.Outcome == record.OutcomeNoStart {
			t := p.tasks[i]
			d.Say = append(d.Say, fmt.Sprintf("tfhive: %s on %s could not start: %s", t.ID, t.Host, s.Err))
			p.decide(d, record.ResultFailed, 1, i, fmt.Sprintf("%s on %s could not start: %s", t.ID, t.Host, s.Err))
		}
	}
	switch {
	case p.Decided():
	case len(blocked) > 0:
		p.conflict = &ClaimBlockedError{Blocked: blocked}
		p.abort(d)
	case len(conflicts) > 0:
		p.conflict = &ClaimConflictError{Conflicts: conflicts}
		p.abort(d)
	case len(queued) > 0:
		p.conflict = &QueuedSinceError{Hosts: queued}
		p.abort(d)
	default:
		d.Send, d.To = CtlGo, p.Live()
		p.went = true
	}
}

// abort gives up the start: nothing ran, every supervisor lets go.
func (p *Policy) abort(d *Decision) {
	for i := range p.state {
		p.state[i].stopped = true
	}
	d.Send, d.To = CtlAbort, p.Live()
}

func (p *Policy) exited(ev Event, d *Decision) {
	s := &p.state[ev.Task]
	if s.Phase == PhaseDone {
		return
	}
	s.Phase = PhaseDone
	lost := ev.Kind == EvLost
	switch {
	case lost:
		s.Outcome, s.Err = record.OutcomeLost, ev.Err
	case s.stopped && (ev.Signalled || s.between || !p.went):
		// Between attempts (told to end) or before go (the start given
		// up), there is no task to signal: tfhive's word ended it.
		s.Outcome, s.Code = record.OutcomeStopped, new(ev.Code)
	default:
		s.Outcome, s.Code = record.OutcomeExited, new(ev.Code)
	}
	if p.Decided() {
		return // the rest are being stopped
	}
	// A group restart waits no longer for a task that is gone.
	defer p.regroupReady(d)
	t := p.tasks[ev.Task]
	label := t.ID + " on " + t.Host
	code, what := record.TaskExitCode(ev.Code), describeExit(ev.Code)
	if lost {
		code, what = record.ExitHostLost, "was lost: "+ev.Err
	}
	switch {
	case (lost || ev.Code != 0) && (p.rule.mustFinish(t.Role) || t.Role == schedule.RolePS):
		// A parameter server that dies leaves the workers waiting forever,
		// so it fails the run too.
		d.Say = append(d.Say, fmt.Sprintf("tfhive: %s %s; stopping the other tasks", label, what))
		reason := label + " " + what
		if !lost && code != ev.Code {
			reason += ", one of tfhive's own codes"
		}
		p.decide(d, record.ResultFailed, code, ev.Task, reason)
	case lost || ev.Code != 0:
		d.Say = append(d.Say, fmt.Sprintf("tfhive: %s %s (not fatal for the run)", label, what))
	case p.rule.mustFinish(t.Role) && p.allSucceeded():
		p.decide(d, record.ResultSucceeded, 0, -1, p.rule.reason())
	}
}

// allSucceeded: every task the rule waits for has exited 0.
func (p *Policy) allSucceeded() bool {
	for i, s := range p.state {
		if p.rule.mustFinish(p.tasks[i].Role) && (s.Outcome != record.OutcomeExited || *s.Code != 0) {
			return false
		}
	}
	return true
}

// decide fixes the run's result once and stops every task still running:
// SIGTERM now, SIGKILL after the grace period.
func (p *Policy) decide(d *Decision, result string, code, decider int, reason string) {
	if p.Decided() {
		return
	}
	p.result, p.code, p.decider, p.reason = result, code, decider, reason
	l := p.stop()
	d.To, d.Ends = p.split(l)
	d.Send = CtlTerm
	d.ArmKill = len(l) > 0
}

// killNow kills what is left at once, on the caller's word.
func (p *Policy) killNow(d *Decision) {
	d.Say = append(d.Say, "tfhive: killing every task now")
	p.kill(d)
}

func (p *Policy) kill(d *Decision) {
	l := p.stop()
	d.To, d.Ends = p.split(l)
	d.Send = CtlKill
	d.ArmKill, d.ArmGiveUp = false, len(l) > 0
}

// split parts l into the tasks in an attempt (they get a signal) and
// those between attempts (they are told to end: Decision.Ends).
func (p *Policy) split(l []int) (inAttempt, between []int) {
	for _, i := range l {
		if p.state[i].between {
			between = append(between, i)
		} else {
			inAttempt = append(inAttempt, i)
		}
	}
	return inAttempt, between
}

// stop marks the live tasks stopped by tfhive and lists them.
func (p *Policy) stop() []int {
	l := p.Live()
	for _, i := range l {
		p.state[i].stopped = true
	}
	return l
}

// Final is the run's result once every task has ended.
func (p *Policy) Final() (result string, code int, reason string, decider int) {
	if p.result == "" {
		// Every task ended on its own without deciding (e.g. no task the
		// rule waits for ever ran): not a success.
		return record.ResultFailed, 1, "the tasks ended without a successful chief or workers", -1
	}
	return p.result, p.code, p.reason, p.decider
}

// SuccessRule says which tasks' success is the run's success.
type SuccessRule int

const (
	ChiefDecides     SuccessRule = iota // TensorFlow with a chief: the chief alone
	WorkersDecide                       // TensorFlow without one: every worker
	EveryRankDecides                    // torch: every rank, the chief included
)

// RuleOf is the success rule of a run of p.
func RuleOf(p *schedule.Plan) SuccessRule {
	switch {
	case p.Torch():
		// A collective needs the whole world: one rank missing leaves
		// the others waiting in it.
		return EveryRankDecides
	case len(p.Cluster.Chief) > 0:
		return ChiefDecides
	}
	return WorkersDecide
}

// mustFinish: the tasks whose success is the run's success; any of them
// failing fails the run.
func (rule SuccessRule) mustFinish(role string) bool {
	switch rule {
	case ChiefDecides:
		return role == schedule.RoleChief
	case WorkersDecide:
		return role == schedule.RoleWorker
	}
	return true
}

func (rule SuccessRule) reason() string {
	switch rule {
	case ChiefDecides:
		return "the chief exited 0"
	case WorkersDecide:
		return "every worker exited 0"
	}
	return "every rank exited 0"
}

func describeExit(rc int) string {
	if rc > 128 && rc < 128+65 {
		return fmt.Sprintf("was killed by signal %d (exit %d)", rc-128, rc)
	}
	return fmt.Sprintf("exited %d", rc)
}
