package sweep

// Queue decides when each trial of a sweep starts: in trial order, at most
// Parallel at once, none once MaxFailures trials have failed or the sweep
// was stopped. It only counts; the caller runs the trials (each a run that
// waits its turn in the hosts' queue like any other).
type Queue struct {
	pending  []int // trial indexes not started, in order
	running  int
	failed   int
	parallel int
	// maxFailures: 0, no limit.
	maxFailures int
	stopped     bool
}

// NewQueue queues the trials todo (indexes, in order) to run parallel at
// a time (at least 1), stopping after maxFailures failures (0: never).
func NewQueue(todo []int, parallel, maxFailures int) *Queue {
	return &Queue{pending: append([]int(nil), todo...), parallel: max(parallel, 1), maxFailures: maxFailures}
}

// Next is the trial to start now, if one may.
func (q *Queue) Next() (int, bool) {
	if q.stopped || len(q.pending) == 0 || q.running >= q.parallel {
		return 0, false
	}
	i := q.pending[0]
	q.pending = q.pending[1:]
	q.running++
	return i, true
}

// Done records that a started trial ended, succeeded or not.
func (q *Queue) Done(succeeded bool) {
	q.running--
	if !succeeded {
		q.failed++
		if q.maxFailures > 0 && q.failed >= q.maxFailures {
			q.stopped = true
		}
	}
}

// Stop starts no more trials (Ctrl-C, kill).
func (q *Queue) Stop() { q.stopped = true }

// Stopped says whether trials were left unstarted on purpose: stopped,
// or too many failures.
func (q *Queue) Stopped() bool { return q.stopped }

// Finished: nothing runs and nothing more will start.
func (q *Queue) Finished() bool {
	return q.running == 0 && (q.stopped || len(q.pending) == 0)
}

// Unstarted are the trials that never started.
func (q *Queue) Unstarted() []int { return q.pending }

// Parallel is how many trials run at once: maxParallel when given (> 0),
// else as many as the fleet's GPUs fit (fleetGPUs / trialGPUs), never
// more than the trials nor less than one. A trial of no GPUs is not
// bounded by them.
func Parallel(maxParallel, fleetGPUs, trialGPUs, trials int) int {
	n := maxParallel
	if n <= 0 {
		n = trials
		if trialGPUs > 0 {
			n = fleetGPUs / trialGPUs
		}
	}
	return max(1, min(n, trials))
}

// Todo are the trials to run: those whose result (by trial id) is not
// "succeeded". A resumed sweep runs only these.
func Todo(ids []string, results map[string]string) []int {
	var out []int
	for i, id := range ids {
		if results[id] != "succeeded" {
			out = append(out, i)
		}
	}
	return out
}

// Adopt counts among the running a trial already under way, that no Next
// started: a resumed sweep's trial still running on its hosts, adopted.
func (q *Queue) Adopt() { q.running++ }
