package launcher

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// Idle GPUs are decided on each host, by the task's supervisor
// (scripts/idle-watch.sh); the engine only tells it the rule and hears
// what it says: a warning on the console and in events.csv, the stop in
// the run's result.

// idleTask is what the supervisor of a task needs to watch its GPUs: the
// host's rule (Options.Idle), the GPUs nvidia-smi reports the use of,
// how often to sample them.
func (r *runner) idleTask(tk *supervisor.Task, t schedule.Task) {
	rule, ok := r.o.Idle[t.Host]
	if !ok {
		rule = inventory.IdleRule{Below: schedule.DefaultIdleBelow}
	}
	// The task is idle when all the run's GPUs here are: one of them
	// busy (a chief's beside an idle evaluator's) holds every task here.
	tk.Idle = rule
	if len(sampledGPUs(t)) > 0 {
		for _, o := range r.o.Plan.Tasks {
			if o.Host == t.Host {
				for _, g := range sampledGPUs(o) {
					if !slices.Contains(tk.IdleGPUs, g) {
						tk.IdleGPUs = append(tk.IdleGPUs, g)
					}
				}
			}
		}
	}
	if rule.Any() {
		tk.IdleEvery = schedule.IdleEvery(rule)
	}
}

// hearIdle has task i's sessions' idle lines said on the console and
// written to the timeline as they come.
func (r *runner) hearIdle(i int) {
	rt := r.tasks[i]
	rule := r.o.Idle[rt.t.Host]
	rt.preempted.OnLedger = func(why string) {
		r.o.Console.Printf("tfhive: warning: %s on %s: the attempt is not in the host's usage ledger: %s", rt.t.ID, rt.t.Host, wording.OneLine(why))
	}
	rt.preempted.OnIdle = func(what string, d time.Duration) {
		switch what {
		case "warn":
			line := fmt.Sprintf("GPUs idle%s for %s", idleUnder(rule), view.ShortDuration(d))
			if rule.Stop > 0 {
				line += fmt.Sprintf("; the run is stopped once they are idle for %s (%s)", view.ShortDuration(rule.Stop), rule.By)
			}
			r.o.Console.Printf("tfhive: warning: %s on %s: %s", rt.t.ID, rt.t.Host, line)
			if r.timeline != nil {
				r.taskEvent(i, record.EventIdleWarning, "idle "+view.ShortDuration(d))
			}
		case "busy":
			r.o.Console.Printf("tfhive: %s on %s: GPUs busy again", rt.t.ID, rt.t.Host)
		case "stopped":
			line := "its host stopped it: GPUs " + idleFor(d)
			if rule.By != "" {
				line += " (" + rule.By + ")"
			}
			r.o.Console.Printf("tfhive: %s on %s: %s", rt.t.ID, rt.t.Host, line)
			if r.timeline != nil {
				r.taskEvent(i, record.EventIdleStopped, idleFor(d))
			}
		}
	}
}

// idleUnder is " (at or under 5%)", "" where the rule is not known here
// (a run adopted from its hosts: their supervisors hold it).
func idleUnder(r inventory.IdleRule) string {
	if !r.Any() {
		return ""
	}
	return fmt.Sprintf(" (at or under %d%%)", r.Below)
}

func idleFor(d time.Duration) string {
	if d < 0 {
		return "idle"
	}
	return "idle " + view.ShortDuration(d)
}

// holdIdle, at each heartbeat, tells the supervisors of the warned
// tasks to hold their stop while a task of the run with GPUs is not
// idle (another host's: those here are one verdict): a run is idle
// only when all its GPUs are. A run whose keeper is gone has nobody to
// say so: each host then decides on its own GPUs.
func (r *runner) holdIdle(live []int) {
	var warned []int
	busy := false
	for _, i := range live {
		rt := r.tasks[i]
		if len(sampledGPUs(rt.t)) == 0 {
			continue
		}
		if since, _, _ := rt.preempted.IdleNow(); since.IsZero() {
			busy = true
		} else {
			warned = append(warned, i)
		}
	}
	if !busy {
		return
	}
	for _, i := range warned {
		r.tasks[i].send(supervisor.CtlIdleHold)
	}
}

// IdleSince is how long task i's GPUs have been idle past the warning,
// for ps, top and status ("idle 37m"); 0: not.
func (r *runner) idleSince(i int) time.Duration {
	since, _, _ := r.tasks[i].preempted.IdleNow()
	if since.IsZero() {
		return 0
	}
	return time.Since(since)
}

// idleStoppedSummary makes a run one of whose tasks its host stopped as
// idle end as idle-stopped, exit 6, whatever its tasks' codes (the task
// stopped by SIGTERM exits 143, which would read as an interrupt), with
// a reason that says why. A preemption says more and wins.
func (r *runner) idleStoppedSummary(s *record.Summary) {
	if s.Result == record.ResultPreempted {
		return
	}
	for _, rt := range r.tasks {
		_, stopped, after := rt.preempted.IdleNow()
		if !stopped {
			continue
		}
		rule := r.o.Idle[rt.t.Host]
		why := fmt.Sprintf("task %s on %s was stopped: its GPUs were idle%s", rt.t.ID, rt.t.Host, idleUnder(rule))
		if after >= 0 {
			why += " for " + view.ShortDuration(after)
		}
		if rule.By != "" {
			why += ", " + rule.By
		}
		s.Result, s.ExitCode, s.Reason = record.ResultIdleStopped, record.ExitIdleStopped, why
		rt.res.Outcome = record.ResultIdleStopped
		return
	}
}
