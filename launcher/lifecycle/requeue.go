package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/record"
)

// A requeue (tfhive run --requeue, --requeue-on, or --wait): a run that
// was preempted, or one of whose tasks asked for it by its exit code
// (after writing a checkpoint), goes back to the queue at its old place
// and starts again, whole, once GPUs free up: a new attempt of the same
// run, as a relaunch after a lost host is (Relaunch carries the attempts),
// its tasks told to resume (TFHIVE_RESUME=1).

// MaxRequeues is how often a run is requeued at most: Slurm's default
// MaxBatchRequeue. A run preempted more often than that waits on no
// longer: something keeps taking its GPUs, and a person should look.
const MaxRequeues = 5

// Requeue is when a run is requeued.
type Requeue struct {
	// Preempted: a preempted run is requeued (--requeue, or --wait).
	Preempted bool
	// On are --requeue-on's exit codes: a run whose deciding task exited
	// so is requeued.
	On []int
}

// Any says whether anything requeues.
func (rq Requeue) Any() bool { return rq.Preempted || len(rq.On) > 0 }

// Requeueable says whether a run that ended as s, already requeued done
// times, goes back to the queue under rq, and why, in a few words: "by
// run R of U" after a preemption, "exit 85" after a task asked.
func Requeueable(s *record.Summary, rq Requeue, done int) (why string, ok bool) {
	if s == nil || done >= MaxRequeues || len(s.Tasks) == 0 {
		return "", false
	}
	switch {
	case s.Result == record.ResultPreempted && rq.Preempted:
		return "preempted", true
	case s.Result == record.ResultFailed && s.Tasks[0].Outcome == record.OutcomeExited &&
		s.Tasks[0].ExitCode != nil && slices.Contains(rq.On, *s.Tasks[0].ExitCode):
		return "task " + s.Tasks[0].ID + " exited " + strconv.Itoa(*s.Tasks[0].ExitCode) + " (--requeue-on)", true
	}
	return "", false
}

// ParseRequeueOn reads --requeue-on's codes, "85" or "85,86": exit
// codes a task may choose, 1 to 125 (126 and up are the shell's and
// signals').
func ParseRequeueOn(s string) ([]int, error) {
	var codes []int
	for w := range strings.SplitSeq(s, ",") {
		w = strings.TrimSpace(w)
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 || n > 125 {
			return nil, fmt.Errorf("--requeue-on %q: %q is not an exit code from 1 to 125", s, w)
		}
		codes = append(codes, n)
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("--requeue-on %q: no exit code", s)
	}
	return codes, nil
}

// RequeueReason is why the tasks of a requeued run were started again:
// an attempt's Restart.
func RequeueReason(why string) string { return "requeued: " + why }

// CarryRequeue is what the run requeued after s carries over: as Carry,
// each task's last attempt naming why, and the count of requeues.
func (rl *Relaunch) CarryRequeue(s *record.Summary, why string) *Relaunch {
	next := rl.carry(s, RequeueReason(why))
	next.Requeues++
	return next
}
