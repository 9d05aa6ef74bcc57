package inventory

import "time"

// Ticket is a run waiting for GPUs (tfhive run --wait), as its ticket's
// holder says on a host: a flock held (/proc/locks) by a process of User
// whose command line carries the label. Waiters order themselves by
// Rank, then Since, then Name.
type Ticket struct {
	Name     string    `json:"name"` // RANK.SINCE.RUN
	RunID    string    `json:"run_id"`
	User     string    `json:"user"`
	Priority string    `json:"priority"`
	Rank     int       `json:"-"` // 0 high, 1 normal, 2 low
	Since    time.Time `json:"since"`
	// Shape is the GPUs each of its tasks asks for ("2,2": two tasks of
	// two GPUs).
	Shape []int `json:"shape"`
	PID   int   `json:"pid"`
	// Requeued: how often the run went back to the queue after a
	// preemption (its label's; 0: never). It waits at its old place.
	Requeued int `json:"requeued,omitempty"`
}
