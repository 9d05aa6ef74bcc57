package launcher

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
)

// The run's lifecycle is a pure function of what happens to it. The runner
// (run.go) turns what its supervisors, its clock and its caller do into
// events, hands them to policy.apply one at a time, and carries out each
// decision: control lines, timers, console lines. Nothing here starts,
// signals, waits or reads a clock, so that every rule is table-tested
// without hosts or timers (policy_test.go).

// eventKind says what happened.
type eventKind int

const (
	evStarted     eventKind = iota // the task's supervisor runs; its claim line is to come
	evNotStarted                   // the task could not start (err)
	evClaim                        // the task's supervisor answered the claim phase (line)
	evExited                       // the task ended with status code (128+N for signal N)
	evLost                         // the task's host or connection was lost (err)
	evInterrupt                    // the caller stopped the run (sig: which signal, nil if unnamed)
	evKillNow                      // the caller asked again: kill at once
	evTimeout                      // the run's --timeout (after) passed
	evGraceOver                    // the grace period after SIGTERM passed
	evGiveUp                       // killed, and still not gone a while later
	evSteppedDown                  // another keeper adopted the run (err: which)
	// Restarts (restart.go): an attempt of the task ended with code after
	// running for after; the backoff before a restart passed (task -1: the
	// group's); the grace period of a group restart's SIGTERM passed.
	evAttemptEnd
	evBackoffOver
	evRegroupKill
)

// event is one thing that happened to the run.
type event struct {
	kind eventKind
	task int
	code int
	err  string
	// claim is the supervisor's answer to the claim phase; err says why
	// when it is ClaimBlocked or ClaimFailed.
	claim ClaimAnswer
	sig   Signal
	after time.Duration
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
)

// Signal is what stopped the run from outside (evInterrupt): the runner
// names the caller's os.Signal here, so that the policy needs no
// operating system's signals.
type Signal int

const (
	SigNone         Signal = iota // the caller's context ended without naming a signal
	SigInt                        // SIGINT, or any signal but SIGTERM
	SigTerm                       // SIGTERM
	SigStdoutClosed               // tfhive's stdout closed (a pipe reader such as head ended)
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
	}
	return "SIGINT"
}

// Control is a control line the runner sends to supervisors; the host
// protocol (launcher/supervisor) spells it.
type Control int

const (
	CtlNone  Control = iota
	CtlGo            // claims are all held: start the task
	CtlAbort         // another task could not claim: give up
	CtlTerm          // SIGTERM the task
	CtlKill          // SIGKILL the task
)

// decision is what the runner must do after an event.
type decision struct {
	say []string // tfhive's console lines, in order
	// send is a control line (CtlGo, CtlAbort, CtlTerm, CtlKill) for the
	// supervisors of the tasks in to.
	send Control
	to   []int
	// abandon: drop these tasks' connections, they do not go away.
	abandon []int
	// armKill: SIGKILL what is left once the grace period has passed.
	// armGiveUp: abandon what is left a while after SIGKILL; it replaces
	// armKill's timer. Neither when nothing is left.
	armKill, armGiveUp bool
	// Restarts: ends get ctlEnd (they are between attempts), restart
	// ctlRestart (their next attempt starts now); later are events the
	// runner feeds back after their wait (backoffs); armRegroupKill:
	// evRegroupKill after the grace period.
	ends, restart  []int
	later          []delayed
	armRegroupKill bool
}

// delayed is an event due after a wait.
type delayed struct {
	after time.Duration
	ev    event
}

// phase is where a task is in its life.
type phase int

const (
	phaseNew     phase = iota // not started yet
	phaseStarted              // its supervisor runs (claiming, or running the task)
	phaseDone                 // ended, or never started
)

// taskState is what the policy knows of one task.
type taskState struct {
	phase   phase
	claimed bool        // its claim line (or start failure) is in
	claim   ClaimAnswer // its claim line
	why     string      // why it is ClaimBlocked
	stopped bool        // tfhive asked it to stop: ending is then no failure
	outcome string      // OutcomeExited etc., once done
	code    *int        // its status, nil when unknown
	err     string
	// Restarts: the current attempt (TFHIVE_ATTEMPT), whether it has
	// ended and the supervisor waits for "r" or "e", whether a restart of
	// its own waits for its backoff, and the attempts that ended.
	attempt  int
	between  bool
	backoff  bool
	attempts []record.Attempt
}

// policy holds a run's state between events.
type policy struct {
	rule  successRule
	tasks []schedule.Task
	state []taskState
	// waiting counts the tasks whose claim line (or start failure) is still
	// to come: the tasks get go only once none is.
	waiting int

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

// adopted records that every task already runs, started and told to go
// by another tfhive: the run's lifecycle goes on from there.
func (p *policy) adopted() {
	for i := range p.state {
		p.state[i] = taskState{phase: phaseStarted, claimed: true, claim: ClaimHeld}
	}
	p.waiting = 0
}

func newPolicy(p *schedule.Plan) *policy {
	return &policy{rule: ruleOf(p), tasks: p.Tasks, state: make([]taskState, len(p.Tasks)),
		waiting: len(p.Tasks), decider: -1, alone: aloneOf(p)}
}

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

// apply takes one event and says what to do about it.
func (p *policy) apply(ev event) decision {
	var d decision
	switch ev.kind {
	case evStarted:
		p.state[ev.task].phase = phaseStarted
	case evNotStarted:
		s := &p.state[ev.task]
		s.phase, s.outcome, s.err = phaseDone, record.OutcomeNoStart, ev.err
		p.claimIn(ev.task, ClaimNone, "", &d)
	case evClaim:
		if ev.claim == ClaimFailed && !p.state[ev.task].claimed {
			s := &p.state[ev.task]
			s.phase, s.outcome, s.err = phaseDone, record.OutcomeNoStart, ev.err
		}
		p.claimIn(ev.task, ev.claim, ev.err, &d)
	case evExited, evLost:
		p.exited(ev, &d)
	case evInterrupt:
		if p.decided() {
			// Already stopping: asking again kills at once. A closed
			// stdout asks nothing: the run stops as it was stopping.
			if ev.sig != SigStdoutClosed {
				p.killNow(&d)
			}
			break
		}
		if ev.sig == SigStdoutClosed {
			p.decide(&d, record.ResultStdoutClosed, record.ExitStdoutClosed, -1, StdoutClosedReason)
			break
		}
		code, reason := 130, "interrupted"
		if ev.sig != SigNone {
			reason += " by " + ev.sig.String()
			if ev.sig == SigTerm {
				code = 143
			}
		}
		p.decide(&d, record.ResultInterrupted, code, -1, reason)
	case evKillNow:
		if !p.decided() {
			p.decide(&d, record.ResultInterrupted, 130, -1, "interrupted")
		}
		p.killNow(&d)
	case evTimeout:
		p.decide(&d, record.ResultTimeout, record.ExitTimeout, -1, fmt.Sprintf("timed out after %s", ev.after))
	case evGraceOver:
		p.kill(&d)
	case evGiveUp:
		d.abandon = p.live()
	case evAttemptEnd:
		p.attemptEnded(ev, &d)
	case evBackoffOver:
		p.backoffOver(ev.task, &d)
	case evRegroupKill:
		if p.regroup != nil && !p.decided() {
			for _, i := range p.regroup {
				if s := p.state[i]; s.phase == phaseStarted && !s.between {
					d.to = append(d.to, i)
				}
			}
			d.send = CtlKill
		}
	case evSteppedDown:
		// Nothing is stopped: the tasks are the other keeper's now.
		if p.result != record.ResultSteppedDown {
			p.result, p.code, p.decider, p.reason = record.ResultSteppedDown, 1, -1, ev.err
		}
		for _, i := range p.live() {
			s := &p.state[i]
			s.phase, s.outcome = phaseDone, record.OutcomeHandedOver
			d.abandon = append(d.abandon, i)
		}
	}
	return d
}

// decided: the run's result is fixed (or it never ran), what is left is
// being stopped.
func (p *policy) decided() bool { return p.result != "" || p.conflict != nil }

// live lists the tasks whose supervisors still run.
func (p *policy) live() []int {
	var l []int
	for i, s := range p.state {
		if s.phase == phaseStarted {
			l = append(l, i)
		}
	}
	return l
}

// running counts the tasks whose end is still to come.
func (p *policy) running() int { return len(p.live()) }

// claimIn records one task's answer to the claim phase; the last one ends
// the phase. Two phases: every supervisor holds its claims before any task
// starts, so two runs racing for the same GPUs never both start.
func (p *policy) claimIn(i int, claim ClaimAnswer, why string, d *decision) {
	s := &p.state[i]
	if s.claimed {
		return
	}
	s.claimed, s.claim, s.why = true, claim, why
	if p.waiting--; p.waiting > 0 {
		return
	}
	var conflicts, blocked []string
	for i, s := range p.state {
		t := p.tasks[i]
		switch {
		case s.outcome == record.OutcomeNoStart:
		case s.claim == ClaimTaken:
			conflicts = append(conflicts, fmt.Sprintf("%s %s", t.Host, describeClaims(claimsFor(t))))
		case s.claim == ClaimBlocked:
			blocked = append(blocked, t.Host+": "+s.why)
		}
	}
	for i, s := range p.state {
		if s.outcome == record.OutcomeNoStart {
			t := p.tasks[i]
			d.say = append(d.say, fmt.Sprintf("tfhive: %s on %s could not start: %s", t.ID, t.Host, s.err))
			p.decide(d, record.ResultFailed, 1, i, fmt.Sprintf("%s on %s could not start: %s", t.ID, t.Host, s.err))
		}
	}
	switch {
	case p.decided():
	case len(blocked) > 0:
		p.conflict = &ClaimBlockedError{Blocked: blocked}
		p.abort(d)
	case len(conflicts) > 0:
		p.conflict = &ClaimConflictError{Conflicts: conflicts}
		p.abort(d)
	default:
		d.send, d.to = CtlGo, p.live()
	}
}

// abort gives up the start: nothing ran, every supervisor lets go.
func (p *policy) abort(d *decision) {
	for i := range p.state {
		p.state[i].stopped = true
	}
	d.send, d.to = CtlAbort, p.live()
}

func (p *policy) exited(ev event, d *decision) {
	s := &p.state[ev.task]
	if s.phase == phaseDone {
		return
	}
	s.phase = phaseDone
	lost := ev.kind == evLost
	switch {
	case lost:
		s.outcome, s.err = record.OutcomeLost, ev.err
	case s.stopped:
		s.outcome, s.code = record.OutcomeStopped, intPtr(ev.code)
	default:
		s.outcome, s.code = record.OutcomeExited, intPtr(ev.code)
	}
	if p.decided() {
		return // the rest are being stopped
	}
	// A group restart waits no longer for a task that is gone.
	defer p.regroupReady(d)
	t := p.tasks[ev.task]
	label := t.ID + " on " + t.Host
	code, what := ev.code, describeExit(ev.code)
	if lost {
		code, what = record.ExitHostLost, "was lost: "+ev.err
	}
	switch {
	case (lost || ev.code != 0) && (p.rule.mustFinish(t.Role) || t.Role == schedule.RolePS):
		// A parameter server that dies leaves the workers waiting forever,
		// so it fails the run too.
		d.say = append(d.say, fmt.Sprintf("tfhive: %s %s; stopping the other tasks", label, what))
		p.decide(d, record.ResultFailed, code, ev.task, label+" "+what)
	case lost || ev.code != 0:
		d.say = append(d.say, fmt.Sprintf("tfhive: %s %s (not fatal for the run)", label, what))
	case p.rule.mustFinish(t.Role) && p.allSucceeded():
		p.decide(d, record.ResultSucceeded, 0, -1, p.rule.reason())
	}
}

// allSucceeded: every task the rule waits for has exited 0.
func (p *policy) allSucceeded() bool {
	for i, s := range p.state {
		if p.rule.mustFinish(p.tasks[i].Role) && (s.outcome != record.OutcomeExited || *s.code != 0) {
			return false
		}
	}
	return true
}

// decide fixes the run's result once and stops every task still running:
// SIGTERM now, SIGKILL after the grace period.
func (p *policy) decide(d *decision, result string, code, decider int, reason string) {
	if p.decided() {
		return
	}
	p.result, p.code, p.decider, p.reason = result, code, decider, reason
	l := p.stop()
	d.to, d.ends = p.split(l)
	d.send = CtlTerm
	d.armKill = len(l) > 0
}

// killNow kills what is left at once, on the caller's word.
func (p *policy) killNow(d *decision) {
	d.say = append(d.say, "tfhive: killing every task now")
	p.kill(d)
}

func (p *policy) kill(d *decision) {
	l := p.stop()
	d.to, d.ends = p.split(l)
	d.send = CtlKill
	d.armKill, d.armGiveUp = false, len(l) > 0
}

// split parts l into the tasks in an attempt (they get a signal) and
// those between attempts (they need ctlEnd).
func (p *policy) split(l []int) (inAttempt, between []int) {
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
func (p *policy) stop() []int {
	l := p.live()
	for _, i := range l {
		p.state[i].stopped = true
	}
	return l
}

// final is the run's result once every task has ended.
func (p *policy) final() (result string, code int, reason string, decider int) {
	if p.result == "" {
		// Every task ended on its own without deciding (e.g. no task the
		// rule waits for ever ran): not a success.
		return record.ResultFailed, 1, "the tasks ended without a successful chief or workers", -1
	}
	return p.result, p.code, p.reason, p.decider
}

// successRule says which tasks' success is the run's success.
type successRule int

const (
	chiefDecides     successRule = iota // TensorFlow with a chief: the chief alone
	workersDecide                       // TensorFlow without one: every worker
	everyRankDecides                    // torch: every rank, the chief included
)

func ruleOf(p *schedule.Plan) successRule {
	switch {
	case p.Torch():
		// A collective needs the whole world: one rank missing leaves
		// the others waiting in it.
		return everyRankDecides
	case len(p.Cluster.Chief) > 0:
		return chiefDecides
	}
	return workersDecide
}

// mustFinish: the tasks whose success is the run's success; any of them
// failing fails the run.
func (rule successRule) mustFinish(role string) bool {
	switch rule {
	case chiefDecides:
		return role == schedule.RoleChief
	case workersDecide:
		return role == schedule.RoleWorker
	}
	return true
}

func (rule successRule) reason() string {
	switch rule {
	case chiefDecides:
		return "the chief exited 0"
	case workersDecide:
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
