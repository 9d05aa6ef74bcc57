package lifecycle

import (
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
)

// A lost host (tfhive run --restarts): the run cannot go on where it ran,
// so it is started again, whole, on a new plan of the same request
// without that host. The caller probes and plans (the fleet and the
// request are its); what is decided here is whether to, after how long,
// and what the new run carries over from the one before: every task's
// attempts, so that TFHIVE_ATTEMPT keeps counting and the summary lists
// them all.

// Relaunch is what a run started again on a new plan carries over
// (RunOptions.Relaunch).
type Relaunch struct {
	// Started is when the run first started: the summary's start and
	// duration are the whole run's.
	Started time.Time
	// Attempts are each task's attempts so far, by task id; the last one
	// says why the run was started again.
	Attempts map[string][]record.Attempt
	// Requeues is how often the run went back to the queue (requeue.go):
	// above 0, its tasks resume (TFHIVE_RESUME=1).
	Requeues int
}

// Relaunchable says whether a run that ended as s is started again
// without the hosts it lost, under rs: it failed because a task's host
// was lost (its deciding task is lost), rs restarts lost hosts, and every
// task has a restart left (a relaunch restarts them all). It returns the
// lost hosts, the wait first and the number of the deciding task's next
// attempt.
func Relaunchable(s *record.Summary, rs Restart) (lost []string, wait time.Duration, next int, ok bool) {
	if s == nil || s.Result != record.ResultFailed || s.ExitCode != record.ExitHostLost || len(s.Tasks) == 0 ||
		s.Tasks[0].Outcome != record.OutcomeLost || !rs.restarts(0, true) {
		return nil, 0, 0, false
	}
	for _, t := range s.Tasks {
		if lastAttempt(t) >= rs.Max {
			return nil, 0, 0, false
		}
		if t.Outcome == record.OutcomeLost && !slices.Contains(lost, t.Host) {
			lost = append(lost, t.Host)
		}
	}
	slices.Sort(lost)
	next = lastAttempt(s.Tasks[0]) + 1
	return lost, rs.backoff(next), next, true
}

// lastAttempt is the number of t's last attempt (0 when it has none).
func lastAttempt(t record.TaskResult) int {
	if n := len(t.Attempts); n > 0 {
		return t.Attempts[n-1].Attempt
	}
	return 0
}

// RelaunchReason is why the tasks of a run that lost hosts were started
// again: "host lost: re-planned without gpu02".
func RelaunchReason(lost []string) string {
	return "host lost: re-planned without " + strings.Join(lost, ", ")
}

// Carry is what the run started again after s, which lost hosts lost,
// carries over: rl's (nil for the run's first start) and s's attempts,
// each naming the host it ran on, the last one of each task why it
// restarted.
func (rl *Relaunch) Carry(s *record.Summary, lost []string) *Relaunch {
	return rl.carry(s, RelaunchReason(lost))
}

// carry is Carry with the last attempts' reason given; a requeued run
// relaunched after a lost host still resumes.
func (rl *Relaunch) carry(s *record.Summary, why string) *Relaunch {
	next := &Relaunch{Started: s.Started, Attempts: map[string][]record.Attempt{}}
	if rl != nil {
		next.Started, next.Requeues = rl.Started, rl.Requeues
	}
	for _, t := range s.Tasks {
		l := slices.Clone(t.Attempts)
		if len(l) == 0 {
			// A run without --restarts lists no attempts: its one.
			l = []record.Attempt{{Outcome: t.Outcome, ExitCode: t.ExitCode, Duration: t.Duration}}
		}
		if n := len(l); t.Outcome == record.ResultPreempted {
			l[n-1].Outcome = t.Outcome
		}
		for i := range l {
			if l[i].Host == "" {
				l[i].Host = t.Host
			}
		}
		if n := len(l); n > 0 {
			l[n-1].Restart = why
		}
		next.Attempts[t.ID] = l
	}
	return next
}

// FirstAttempt is the number a task's first attempt of this run takes.
func (rl *Relaunch) FirstAttempt(id string) int {
	if rl == nil {
		return 0
	}
	if l := rl.Attempts[id]; len(l) > 0 {
		return l[len(l)-1].Attempt + 1
	}
	return 0
}

// Earlier is a task's attempts before this run, on host: those that ran
// there do not name it (the summary names the task's host).
func (rl *Relaunch) Earlier(id, host string) []record.Attempt {
	if rl == nil {
		return nil
	}
	l := slices.Clone(rl.Attempts[id])
	for i := range l {
		if l[i].Host == host {
			l[i].Host = ""
		}
	}
	return l
}
