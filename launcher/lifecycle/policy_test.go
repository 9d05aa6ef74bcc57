package lifecycle

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/schedule"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// step is an event and the decision it must bring, as render writes it.
type step struct {
	ev   Event
	want string
}

func started(i int) Event { return Event{Kind: EvStarted, Task: i} }
func notStarted(i int, err string) Event {
	return Event{Kind: EvNotStarted, Task: i, Err: err}
}
func claimLine(i int, a answer) Event {
	return Event{Kind: EvClaim, Task: i, Claim: a.claim, Err: a.why}
}

// answer is a supervisor's answer to the claim phase, as the runner names
// it.
type answer struct {
	claim ClaimAnswer
	why   string
}

var (
	held  = answer{claim: ClaimHeld}
	taken = answer{claim: ClaimTaken}
)

func blocked(why string) answer { return answer{ClaimBlocked, why} }
func failed(why string) answer  { return answer{ClaimFailed, why} }

// exited is a task's end, the stop tfhive asked for (if any) passed on to
// it; exitedOwn is one that ended on its own though tfhive had asked.
func exited(i, code int) Event     { return Event{Kind: EvExited, Task: i, Code: code, Signalled: true} }
func exitedOwn(i, code int) Event  { return Event{Kind: EvExited, Task: i, Code: code} }
func lost(i int, err string) Event { return Event{Kind: EvLost, Task: i, Err: err} }

var (
	interruptINT    = Event{Kind: EvInterrupt, Sig: SigInt}
	interruptTERM   = Event{Kind: EvInterrupt, Sig: SigTerm}
	interruptBare   = Event{Kind: EvInterrupt}
	interruptPipe   = Event{Kind: EvInterrupt, Sig: SigStdoutClosed}
	interruptCancel = Event{Kind: EvInterrupt, Sig: SigCancelled}
	killNowEv       = Event{Kind: EvKillNow}
	graceOver       = Event{Kind: EvGraceOver}
	giveUp          = Event{Kind: EvGiveUp}
)

func timedOut(d time.Duration) Event { return Event{Kind: EvTimeout, After: d} }

// render writes a decision in one line: console lines, the control line
// and its tasks ("t ps:0,worker:1"), abandoned tasks and timers.
func render(p *Policy, d Decision) string {
	ids := func(l []int) string {
		var s []string
		for _, i := range l {
			s = append(s, p.tasks[i].ID)
		}
		return strings.Join(s, ",")
	}
	parts := append([]string(nil), d.Say...)
	if d.Send != CtlNone && len(d.To) > 0 {
		parts = append(parts, ctlLetters[d.Send]+" "+ids(d.To))
	}
	if len(d.Abandon) > 0 {
		parts = append(parts, "abandon "+ids(d.Abandon))
	}
	if d.ArmKill {
		parts = append(parts, "kill-timer")
	}
	if d.ArmGiveUp {
		parts = append(parts, "give-up-timer")
	}
	if len(d.Ends) > 0 {
		parts = append(parts, "e "+ids(d.Ends))
	}
	if len(d.Restart) > 0 {
		parts = append(parts, "r "+ids(d.Restart))
	}
	for _, l := range d.Later {
		who := "all"
		if l.Event.Task >= 0 {
			who = p.tasks[l.Event.Task].ID
		}
		parts = append(parts, fmt.Sprintf("backoff %s %s", who, l.After))
	}
	if d.ArmRegroupKill {
		parts = append(parts, "regroup-kill-timer")
	}
	return strings.Join(parts, " | ")
}

// ctlLetters are the control lines' letters on the wire, which render
// writes.
var ctlLetters = map[Control]string{CtlGo: "g", CtlAbort: "a", CtlTerm: "t", CtlKill: "k"}

// launched is the claim phase of a run whose every task starts and
// claims: the last claim brings go for all.
func launched(p *schedule.Plan) []step {
	var steps []step
	var all []string
	for i, t := range p.Tasks {
		steps = append(steps, step{started(i), ""})
		all = append(all, t.ID)
	}
	for i := range p.Tasks {
		steps = append(steps, step{claimLine(i, held), ""})
	}
	steps[len(steps)-1].want = "g " + strings.Join(all, ",")
	return steps
}

func TestPolicy(t *testing.T) {
	psWorkers := scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2")
	withEval := scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2", "evaluator:0@h2")
	chief := scheduletest.TF("chief:0@h1", "ps:0@h1", "worker:0@h2", "worker:1@h2")
	torch := scheduletest.Plan(schedule.FrameworkTorch, "worker:0@h1", "worker:1@h1", "worker:2@h2")
	for _, c := range []struct {
		name  string
		plan  *schedule.Plan
		claim []step // the claim phase; nil: launched(plan)
		steps []step
		// The summary's result, code, reason and deciding task ("" none).
		result, reason, decider string
		code                    int
		// outcomes: every task's "outcome code" or "outcome: error".
		outcomes []string
	}{
		{
			name: "tf: the workers decide, the ps is stopped",
			plan: psWorkers,
			steps: []step{
				{exited(1, 0), ""},
				{exited(2, 0), "t ps:0 | kill-timer"},
				{exited(0, 143), ""},
			},
			result: record.ResultSucceeded, code: 0, reason: "every worker exited 0",
			outcomes: []string{"stopped 143", "exited 0", "exited 0"},
		},
		{
			name: "tf: a failing worker fails the run",
			plan: psWorkers,
			steps: []step{
				{exited(1, 0), ""},
				{exited(2, 9), "tfhive: worker:1 on h2 exited 9; stopping the other tasks | t ps:0 | kill-timer"},
				{exited(0, 143), ""},
			},
			result: record.ResultFailed, code: 9, reason: "worker:1 on h2 exited 9", decider: "worker:1",
			outcomes: []string{"stopped 143", "exited 0", "exited 9"},
		},
		{
			name: "tf: a worker killed by a signal",
			plan: psWorkers,
			steps: []step{
				{exited(1, 137), "tfhive: worker:0 on h1 was killed by signal 9 (exit 137); stopping the other tasks | t ps:0,worker:1 | kill-timer"},
				{exited(0, 143), ""},
				{exited(2, 0), ""},
			},
			result: record.ResultFailed, code: 137, reason: "worker:0 on h1 was killed by signal 9 (exit 137)", decider: "worker:0",
			outcomes: []string{"stopped 143", "exited 137", "stopped 0"},
		},
		{
			// Two failing at once: the second ended on its own before the
			// stop reached it (its supervisor passed no signal on), so it
			// says what it did, not "stopped".
			name: "tf: two workers failing together each keep their own exit",
			plan: psWorkers,
			steps: []step{
				{exited(1, 3), "tfhive: worker:0 on h1 exited 3; stopping the other tasks | t ps:0,worker:1 | kill-timer"},
				{exitedOwn(2, 3), ""},
				{exited(0, 143), ""},
			},
			result: record.ResultFailed, code: 1, reason: "worker:0 on h1 exited 3, one of tfhive's own codes", decider: "worker:0",
			outcomes: []string{"stopped 143", "exited 3", "exited 3"},
		},
		{
			name: "tf: a failing ps fails the run, even with a chief",
			plan: chief,
			steps: []step{
				{exited(1, 1), "tfhive: ps:0 on h1 exited 1; stopping the other tasks | t chief:0,worker:0,worker:1 | kill-timer"},
				{exited(0, 143), ""},
				{exited(2, 143), ""},
				{exited(3, 143), ""},
			},
			result: record.ResultFailed, code: 1, reason: "ps:0 on h1 exited 1", decider: "ps:0",
			outcomes: []string{"stopped 143", "exited 1", "stopped 143", "stopped 143"},
		},
		{
			name: "tf: a ps ending 0 decides nothing",
			plan: psWorkers,
			steps: []step{
				{exited(0, 0), ""},
				{exited(1, 0), ""},
				{exited(2, 0), ""},
			},
			result: record.ResultSucceeded, code: 0, reason: "every worker exited 0",
			outcomes: []string{"exited 0", "exited 0", "exited 0"},
		},
		{
			name: "tf: a failing evaluator is not fatal",
			plan: withEval,
			steps: []step{
				{exited(3, 2), "tfhive: evaluator:0 on h2 exited 2 (not fatal for the run)"},
				{exited(1, 0), ""},
				{exited(2, 0), "t ps:0 | kill-timer"},
				{exited(0, 143), ""},
			},
			result: record.ResultSucceeded, code: 0, reason: "every worker exited 0",
			outcomes: []string{"stopped 143", "exited 0", "exited 0", "exited 2"},
		},
		{
			name: "tf: a lost evaluator is not fatal",
			plan: withEval,
			steps: []step{
				{lost(3, "connection lost"), "tfhive: evaluator:0 on h2 was lost: connection lost (not fatal for the run)"},
				{exited(1, 0), ""},
				{exited(2, 0), "t ps:0 | kill-timer"},
				{exited(0, 143), ""},
			},
			result: record.ResultSucceeded, code: 0, reason: "every worker exited 0",
			outcomes: []string{"stopped 143", "exited 0", "exited 0", "lost: connection lost"},
		},
		{
			name: "chief mode: the chief alone decides",
			plan: chief,
			steps: []step{
				{exited(3, 1), "tfhive: worker:1 on h2 exited 1 (not fatal for the run)"},
				{exited(2, 0), ""},
				{exited(0, 0), "t ps:0 | kill-timer"},
				{exited(1, 143), ""},
			},
			result: record.ResultSucceeded, code: 0, reason: "the chief exited 0",
			outcomes: []string{"exited 0", "stopped 143", "exited 0", "exited 1"},
		},
		{
			name: "chief mode: the chief failing fails the run",
			plan: chief,
			steps: []step{
				{exited(0, 3), "tfhive: chief:0 on h1 exited 3; stopping the other tasks | t ps:0,worker:0,worker:1 | kill-timer"},
				{exited(1, 143), ""}, {exited(2, 143), ""}, {exited(3, 143), ""},
			},
			result: record.ResultFailed, code: 1, reason: "chief:0 on h1 exited 3, one of tfhive's own codes", decider: "chief:0",
			outcomes: []string{"exited 3", "stopped 143", "stopped 143", "stopped 143"},
		},
		{
			name: "torch: every rank decides",
			plan: torch,
			steps: []step{
				{exited(0, 0), ""},
				{exited(2, 0), ""},
				{exited(1, 0), ""},
			},
			result: record.ResultSucceeded, code: 0, reason: "every rank exited 0",
			outcomes: []string{"exited 0", "exited 0", "exited 0"},
		},
		{
			name: "torch: one rank failing fails the run",
			plan: torch,
			steps: []step{
				{exited(0, 0), ""},
				{exited(2, 1), "tfhive: worker:2 on h2 exited 1; stopping the other tasks | t worker:1 | kill-timer"},
				{exited(1, 143), ""},
			},
			result: record.ResultFailed, code: 1, reason: "worker:2 on h2 exited 1", decider: "worker:2",
			outcomes: []string{"exited 0", "stopped 143", "exited 1"},
		},
		{
			name: "a lost host fails the run with exit 4",
			plan: psWorkers,
			steps: []step{
				{lost(2, "connection lost before the command finished"), "tfhive: worker:1 on h2 was lost: connection lost before the command finished; stopping the other tasks | t ps:0,worker:0 | kill-timer"},
				{exited(0, 143), ""},
				{exited(1, 143), ""},
			},
			result: record.ResultFailed, code: record.ExitHostLost, reason: "worker:1 on h2 was lost: connection lost before the command finished", decider: "worker:1",
			outcomes: []string{"stopped 143", "stopped 143", "lost: connection lost before the command finished"},
		},
		{
			name: "timeout: SIGTERM, SIGKILL after the grace period, then give up",
			plan: psWorkers,
			steps: []step{
				{timedOut(90 * time.Second), "t ps:0,worker:0,worker:1 | kill-timer"},
				{exited(0, 143), ""},
				{graceOver, "k worker:0,worker:1 | give-up-timer"},
				{exited(1, 137), ""},
				{giveUp, "abandon worker:1"},
				{lost(2, "abandoned before the command finished"), ""},
				{timedOut(time.Second), ""},
			},
			result: record.ResultTimeout, code: record.ExitTimeout, reason: "timed out after 1m30s",
			outcomes: []string{"stopped 143", "stopped 137", "lost: abandoned before the command finished"},
		},
		{
			name: "first interrupt: graceful, 130 for SIGINT",
			plan: psWorkers,
			steps: []step{
				{interruptINT, "t ps:0,worker:0,worker:1 | kill-timer"},
				{exited(0, 143), ""}, {exited(1, 143), ""}, {exited(2, 0), ""},
			},
			result: record.ResultInterrupted, code: 130, reason: "interrupted by SIGINT",
			outcomes: []string{"stopped 143", "stopped 143", "stopped 0"},
		},
		{
			name: "first interrupt: 143 for SIGTERM",
			plan: psWorkers,
			steps: []step{
				{interruptTERM, "t ps:0,worker:0,worker:1 | kill-timer"},
				{exited(0, 143), ""}, {exited(1, 143), ""}, {exited(2, 143), ""},
			},
			result: record.ResultInterrupted, code: 143, reason: "interrupted by SIGTERM",
			outcomes: []string{"stopped 143", "stopped 143", "stopped 143"},
		},
		{
			name: "interrupt naming no signal",
			plan: psWorkers,
			steps: []step{
				{exited(1, 0), ""},
				{interruptBare, "t ps:0,worker:1 | kill-timer"},
				{exited(0, 143), ""}, {exited(2, 143), ""},
			},
			result: record.ResultInterrupted, code: 130, reason: "interrupted",
			outcomes: []string{"stopped 143", "exited 0", "stopped 143"},
		},
		{
			name: "second interrupt: kill now",
			plan: psWorkers,
			steps: []step{
				{interruptINT, "t ps:0,worker:0,worker:1 | kill-timer"},
				{exited(0, 143), ""},
				{killNowEv, "tfhive: killing every task now | k worker:0,worker:1 | give-up-timer"},
				{exited(1, 137), ""}, {exited(2, 137), ""},
			},
			result: record.ResultInterrupted, code: 130, reason: "interrupted by SIGINT",
			outcomes: []string{"stopped 143", "stopped 137", "stopped 137"},
		},
		{
			name: "kill now before any interrupt",
			plan: psWorkers,
			steps: []step{
				{killNowEv, "tfhive: killing every task now | k ps:0,worker:0,worker:1 | give-up-timer"},
				{exited(0, 137), ""}, {exited(1, 137), ""}, {exited(2, 137), ""},
			},
			result: record.ResultInterrupted, code: 130, reason: "interrupted",
			outcomes: []string{"stopped 137", "stopped 137", "stopped 137"},
		},
		{
			name: "an interrupt while stopping after a failure kills now",
			plan: psWorkers,
			steps: []step{
				{exited(1, 2), "tfhive: worker:0 on h1 exited 2; stopping the other tasks | t ps:0,worker:1 | kill-timer"},
				{interruptTERM, "tfhive: killing every task now | k ps:0,worker:1 | give-up-timer"},
				{exited(0, 137), ""}, {exited(2, 137), ""},
			},
			result: record.ResultFailed, code: 1, reason: "worker:0 on h1 exited 2, one of tfhive's own codes", decider: "worker:0",
			outcomes: []string{"stopped 137", "exited 2", "stopped 137"},
		},
		{
			name: "a closed stdout stops the run as an interrupt does, with its own result and 141",
			plan: psWorkers,
			steps: []step{
				{interruptPipe, "t ps:0,worker:0,worker:1 | kill-timer"},
				{exited(0, 143), ""}, {exited(1, 143), ""}, {exited(2, 143), ""},
			},
			result: record.ResultStdoutClosed, code: record.ExitStdoutClosed, reason: "standard output closed (a pipe reader such as head ended)",
			outcomes: []string{"stopped 143", "stopped 143", "stopped 143"},
		},
		{
			name: "kill of its sweep stops a trial as an interrupt does, cancelled, 143",
			plan: psWorkers,
			steps: []step{
				{interruptCancel, "t ps:0,worker:0,worker:1 | kill-timer"},
				{exited(0, 143), ""}, {exited(1, 0), ""}, {exited(2, 143), ""},
			},
			result: record.ResultCancelled, code: record.ExitCancelled, reason: "cancelled (tfhive kill of its sweep)",
			outcomes: []string{"stopped 143", "stopped 0", "stopped 143"},
		},
		{
			name: "a closed stdout while stopping after a failure kills nothing sooner",
			plan: psWorkers,
			steps: []step{
				{exited(1, 2), "tfhive: worker:0 on h1 exited 2; stopping the other tasks | t ps:0,worker:1 | kill-timer"},
				{interruptPipe, ""},
				{exited(0, 143), ""}, {exited(2, 143), ""},
			},
			result: record.ResultFailed, code: 1, reason: "worker:0 on h1 exited 2, one of tfhive's own codes", decider: "worker:0",
			outcomes: []string{"stopped 143", "exited 2", "stopped 143"},
		},
		{
			name: "a second Ctrl-C after a closed stdout kills now",
			plan: psWorkers,
			steps: []step{
				{interruptPipe, "t ps:0,worker:0,worker:1 | kill-timer"},
				{interruptINT, "tfhive: killing every task now | k ps:0,worker:0,worker:1 | give-up-timer"},
				{exited(0, 137), ""}, {exited(1, 137), ""}, {exited(2, 137), ""},
			},
			result: record.ResultStdoutClosed, code: record.ExitStdoutClosed, reason: "standard output closed (a pipe reader such as head ended)",
			outcomes: []string{"stopped 137", "stopped 137", "stopped 137"},
		},
		{
			name: "the tasks end without a decision",
			plan: scheduletest.TF("ps:0@h1", "evaluator:0@h1"),
			steps: []step{
				{exited(0, 0), ""},
				{exited(1, 0), ""},
			},
			result: record.ResultFailed, code: 1, reason: "the tasks ended without a successful chief or workers",
			outcomes: []string{"exited 0", "exited 0"},
		},
		{
			name: "a task that cannot start fails the run; the others are stopped before go",
			plan: psWorkers,
			claim: []step{
				{started(0), ""},
				{notStarted(1, "no connection to h1"), ""},
				{notStarted(2, "sending the task: EOF"), ""},
				{claimLine(0, held), "tfhive: worker:0 on h1 could not start: no connection to h1 | tfhive: worker:1 on h2 could not start: sending the task: EOF | t ps:0 | kill-timer"},
			},
			steps: []step{
				{exited(0, supervisor.ExitClaimBusy), ""},
			},
			result: record.ResultFailed, code: 1, reason: "worker:0 on h1 could not start: no connection to h1", decider: "worker:0",
			outcomes: []string{"stopped 75", "not-started: no connection to h1", "not-started: sending the task: EOF"},
		},
		{
			name: "a kept task whose files its host refuses could not start; its supervisor's end changes nothing",
			plan: scheduletest.TF("worker:0@h1", "worker:1@h2"),
			claim: []step{
				{started(0), ""}, {started(1), ""},
				{claimLine(0, failed("/h/.tfhive/runs is a symbolic link")), ""},
				{claimLine(1, held), "tfhive: worker:0 on h1 could not start: /h/.tfhive/runs is a symbolic link | t worker:1 | kill-timer"},
			},
			steps: []step{
				{exited(0, 126), ""},
				{exited(1, supervisor.ExitClaimBusy), ""},
			},
			result: record.ResultFailed, code: 1, reason: "worker:0 on h1 could not start: /h/.tfhive/runs is a symbolic link", decider: "worker:0",
			outcomes: []string{"not-started: /h/.tfhive/runs is a symbolic link", "stopped 75"},
		},
		{
			name: "no task can start",
			plan: scheduletest.TF("worker:0@h1"),
			claim: []step{
				{notStarted(0, "no connection to h1"), "tfhive: worker:0 on h1 could not start: no connection to h1"},
			},
			result: record.ResultFailed, code: 1, reason: "worker:0 on h1 could not start: no connection to h1", decider: "worker:0",
			outcomes: []string{"not-started: no connection to h1"},
		},
		{
			name: "claims come in any order; a supervisor that ends first is a failure after go",
			plan: psWorkers,
			claim: []step{
				{started(0), ""}, {started(1), ""}, {started(2), ""},
				{claimLine(2, held), ""},
				{claimLine(1, answer{}), ""},
				{claimLine(1, held), ""}, // a second answer changes nothing
				{claimLine(0, held), "g ps:0,worker:0,worker:1"},
			},
			steps: []step{
				{exited(1, 127), "tfhive: worker:0 on h1 exited 127; stopping the other tasks | t ps:0,worker:1 | kill-timer"},
				{exited(1, 0), ""}, // its end told twice: the first counts
				{exited(0, 143), ""}, {exited(2, 143), ""},
			},
			result: record.ResultFailed, code: 127, reason: "worker:0 on h1 exited 127", decider: "worker:0",
			outcomes: []string{"stopped 143", "exited 127", "stopped 143"},
		},
		{
			name: "an interrupt during the claim phase: no go",
			plan: scheduletest.TF("worker:0@h1", "worker:1@h2"),
			claim: []step{
				{started(0), ""}, {started(1), ""},
				{claimLine(0, held), ""},
				{interruptINT, "t worker:0,worker:1 | kill-timer"},
				{claimLine(1, held), ""},
			},
			steps:  []step{{exited(0, supervisor.ExitClaimBusy), ""}, {exited(1, supervisor.ExitClaimBusy), ""}},
			result: record.ResultInterrupted, code: 130, reason: "interrupted by SIGINT",
			outcomes: []string{"stopped 75", "stopped 75"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := New(c.plan, Restart{})
			steps := c.claim
			if steps == nil {
				steps = launched(c.plan)
			}
			for _, s := range append(steps, c.steps...) {
				if got := render(p, p.Apply(s.ev)); got != s.want {
					t.Fatalf("after %+v:\n got %q\nwant %q", s.ev, got, s.want)
				}
			}
			if n := p.Running(); n != 0 {
				t.Fatalf("%d tasks still running", n)
			}
			result, code, reason, decider := p.Final()
			did := ""
			if decider >= 0 {
				did = p.tasks[decider].ID
			}
			if result != c.result || code != c.code || reason != c.reason || did != c.decider {
				t.Errorf("final %s %d %q by %q, want %s %d %q by %q", result, code, reason, did, c.result, c.code, c.reason, c.decider)
			}
			if p.conflict != nil {
				t.Errorf("conflict %v", p.conflict)
			}
			for i, want := range c.outcomes {
				s := p.state[i]
				got := s.Outcome
				if s.Code != nil {
					got += " " + strconv.Itoa(*s.Code)
				}
				if s.Err != "" {
					got += ": " + s.Err
				}
				if got != want {
					t.Errorf("%s: outcome %q, want %q", p.tasks[i].ID, got, want)
				}
			}
		})
	}
}

// A claim taken or blocked on any host, or a start planned on an older
// probe that met a run queued since: every supervisor is told to give
// up, nothing runs, and the run is no result but an error (a queue seen
// since names each host once; a claim taken is the conflict said, the
// one a retry waits out).
func TestPolicyClaimConflicts(t *testing.T) {
	plan := scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2")
	queued := answer{claim: ClaimQueued}
	for _, c := range []struct {
		name  string
		lines []answer
		want  string // the error
		typ   string // its type
	}{
		{"taken", []answer{held, taken, held},
			"claimed by another run while starting: h1 (one of gpu 0, port 2223)", "*lifecycle.ClaimConflictError"},
		{"two taken", []answer{taken, held, taken},
			"claimed by another run while starting: h1 (one of gpu 0, port 2222); h2 (one of gpu 1, port 2224)", "*lifecycle.ClaimConflictError"},
		{"blocked wins over taken", []answer{taken, blocked("/tmp/x is not a regular file (owned by eve)"), held},
			"h1: /tmp/x is not a regular file (owned by eve); ask its owner or root to remove it", "*lifecycle.ClaimBlockedError"},
		{"queued since", []answer{queued, queued, held},
			"a run queued on h1 since the probe this start was planned on: planning again", "*lifecycle.QueuedSinceError"},
		{"taken wins over queued since", []answer{queued, held, taken},
			"claimed by another run while starting: h2 (one of gpu 1, port 2224)", "*lifecycle.ClaimConflictError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := New(plan, Restart{})
			for i := range plan.Tasks {
				p.Apply(started(i))
			}
			var last Decision
			for i, line := range c.lines {
				last = p.Apply(claimLine(i, line))
			}
			if got := render(p, last); got != "a ps:0,worker:0,worker:1" {
				t.Errorf("decision %q, want abort to all", got)
			}
			if p.conflict == nil || p.conflict.Error() != c.want {
				t.Fatalf("conflict %v, want %q", p.conflict, c.want)
			}
			if got := fmt.Sprintf("%T", p.conflict); got != c.typ {
				t.Errorf("conflict %s, want %s", got, c.typ)
			}
			// main maps both kinds to exit 3 (main_test.go).
			// The supervisors end; an interrupt meanwhile kills them.
			if got := render(p, p.Apply(exited(0, supervisor.ExitClaimBusy))); got != "" {
				t.Errorf("exit: %q", got)
			}
			if got := render(p, p.Apply(interruptINT)); got != "tfhive: killing every task now | k worker:0,worker:1 | give-up-timer" {
				t.Errorf("interrupt: %q", got)
			}
			p.Apply(exited(1, 137))
			p.Apply(exited(2, 137))
			if p.Running() != 0 || p.state[1].Outcome != record.OutcomeStopped {
				t.Errorf("state %+v", p.state)
			}
		})
	}
}

func TestDescribeExit(t *testing.T) {
	for rc, want := range map[int]string{0: "exited 0", 1: "exited 1", 128: "exited 128", 130: "was killed by signal 2 (exit 130)",
		192: "was killed by signal 64 (exit 192)", 193: "exited 193", 255: "exited 255"} {
		if got := describeExit(rc); got != want {
			t.Errorf("describeExit(%d) = %q, want %q", rc, got, want)
		}
	}
	for sig, want := range map[Signal]string{SigTerm: "SIGTERM", SigInt: "SIGINT"} {
		if got := sig.String(); got != want {
			t.Errorf("Signal(%d).String() = %q", sig, got)
		}
	}
}
