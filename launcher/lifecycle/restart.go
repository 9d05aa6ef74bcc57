package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
)

// Restarts (tfhive run --restarts): which failures restart a task, how
// long to wait first, and who restarts with it (alone, or every task).
// The supervisor runs the task again under the same claims when the
// runner says so (launcher/restart.go).

// Restart is --restarts, --restart-on and --restart-backoff.
type Restart struct {
	// Max is how many times a task may be started again: it runs at most
	// Max+1 times. 0: never restarted.
	Max int
	// On says which failures restart; nil: any.
	On *RestartOn
	// Backoff is the wait before the first restart of a task; it doubles
	// with each restart, up to MaxRestartBackoff.
	Backoff time.Duration
	// Requeue are --requeue-on's codes: a task that exits so asked for the
	// queue (requeue.go), never a restart in place.
	Requeue []int
}

// DefaultRestartBackoff is --restart-backoff's default: long enough for a
// port in TIME_WAIT or a flaky mount to come back, short against a run.
const DefaultRestartBackoff = 10 * time.Second

// MaxRestartBackoff caps the backoff's growth (a longer --restart-backoff
// is used as given, without growing).
const MaxRestartBackoff = 5 * time.Minute

// RestartOn is --restart-on: exit codes and ranges, and "lost" for a
// lost host (Relaunch).
type RestartOn struct {
	ranges [][2]int
	lost   bool
	text   string
}

// ParseRestartOn reads "1-127,137,lost".
func ParseRestartOn(s string) (*RestartOn, error) {
	on := &RestartOn{text: s}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "lost" {
			on.lost = true
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 1 || b > 255 || a > b {
			return nil, fmt.Errorf("--restart-on: %q is not an exit code 1-255, a range of them (1-127) or lost", f)
		}
		on.ranges = append(on.ranges, [2]int{a, b})
	}
	return on, nil
}

func (on *RestartOn) String() string {
	if on == nil {
		return "any failure"
	}
	return on.text
}

// restarts says whether a task that ended with code (or whose host was
// lost) may be restarted.
func (rs Restart) restarts(code int, lost bool) bool {
	if rs.Max <= 0 || (code == 0 && !lost) || (!lost && slices.Contains(rs.Requeue, code)) {
		return false
	}
	if rs.On == nil {
		return true
	}
	if lost {
		return rs.On.lost
	}
	for _, r := range rs.On.ranges {
		if code >= r[0] && code <= r[1] {
			return true
		}
	}
	return false
}

// backoff is the wait before a task's restart number n (1 for the first):
// Backoff, doubled for each restart before, capped.
func (rs Restart) backoff(n int) time.Duration {
	d := rs.Backoff
	for i := 1; i < n && d < MaxRestartBackoff; i++ {
		d *= 2
	}
	if d > MaxRestartBackoff && rs.Backoff <= MaxRestartBackoff {
		d = MaxRestartBackoff
	}
	return d
}

// attemptEnded: task ev.task's attempt ended with ev.code; its supervisor
// waits for "r" or "e".
func (p *Policy) attemptEnded(ev Event, d *Decision) {
	s := &p.state[ev.Task]
	if s.Phase != PhaseStarted || s.between {
		return
	}
	s.between = true
	a := record.Attempt{Attempt: s.Attempt, Outcome: record.OutcomeExited, ExitCode: new(ev.Code), Duration: ev.After}
	t := p.tasks[ev.Task]
	label := t.ID + " on " + t.Host
	switch {
	case s.stopped || p.Decided():
		if s.stopped {
			a.Outcome = record.OutcomeStopped
		}
		s.Attempts = append(s.Attempts, a)
		d.Ends = append(d.Ends, ev.Task)
	case p.inRegroup(ev.Task):
		a.Outcome, a.Restart = record.OutcomeStopped, "restarted with every task: "+p.regroupWhy
		if ev.Code != 0 && !p.signalled(ev.Code) {
			a.Outcome = record.OutcomeExited
		}
		s.Attempts = append(s.Attempts, a)
		p.regroupReady(d)
	case ev.Code == 0 || !p.restart.restarts(ev.Code, false) || s.Attempt >= p.restart.Max:
		s.Attempts = append(s.Attempts, a)
		d.Ends = append(d.Ends, ev.Task)
	default:
		wait := p.restart.backoff(s.Attempt + 1)
		next := fmt.Sprintf("attempt %d of %d", s.Attempt+2, p.restart.Max+1)
		if p.alone(ev.Task) {
			a.Restart = "restarted alone"
			s.Attempts = append(s.Attempts, a)
			s.backoff = true
			d.Say = append(d.Say, fmt.Sprintf("tfhive: %s %s; restarting it in %s (%s)", label, describeExit(ev.Code), wait, next))
			d.Later = append(d.Later, Delayed{wait, Event{Kind: EvBackoffOver, Task: ev.Task}})
			return
		}
		p.regroupWhy = label + " " + describeExit(ev.Code)
		a.Restart = "restarted every task"
		s.Attempts = append(s.Attempts, a)
		p.regroup, p.regroupWait = p.Live(), wait
		d.Say = append(d.Say, fmt.Sprintf("tfhive: %s %s; restarting every task in %s (%s)", label, describeExit(ev.Code), wait, next))
		for _, i := range p.regroup {
			o := &p.state[i]
			if o.between {
				// A restart of its own waiting: it goes with the group's.
				o.backoff = false
				continue
			}
			d.To = append(d.To, i)
		}
		if len(d.To) > 0 {
			d.Send, d.ArmRegroupKill = CtlTerm, true
		}
		p.regroupReady(d)
	}
}

// signalled: code is a signal's (tfhive's SIGTERM or SIGKILL of a group
// restart).
func (p *Policy) signalled(code int) bool { return code == 128+15 || code == 128+9 }

func (p *Policy) inRegroup(i int) bool {
	return p.regroup != nil && slices.Contains(p.regroup, i)
}

// regroupReady arms the group's backoff once every task of the group
// restart has ended its attempt.
func (p *Policy) regroupReady(d *Decision) {
	if p.regroup == nil || p.regroupArmed {
		return
	}
	for _, i := range p.regroup {
		if s := p.state[i]; s.Phase == PhaseStarted && !s.between {
			return
		}
	}
	p.regroupArmed = true
	d.Later = append(d.Later, Delayed{p.regroupWait, Event{Kind: EvBackoffOver, Task: -1}})
}

// backoffOver starts the next attempt of task i (-1: of the group
// restart's tasks), unless the run was decided meanwhile (they were told
// to end then).
func (p *Policy) backoffOver(i int, d *Decision) {
	if p.Decided() {
		return
	}
	next := func(i int) {
		s := &p.state[i]
		if s.Phase != PhaseStarted || !s.between {
			return
		}
		s.between, s.backoff = false, false
		s.Attempt++
		d.Restart = append(d.Restart, i)
	}
	if i >= 0 {
		if p.state[i].backoff {
			next(i)
		}
		return
	}
	for _, i := range p.regroup {
		next(i)
	}
	p.regroup, p.regroupArmed = nil, false
}
