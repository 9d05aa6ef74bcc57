package inventory

import "time"

// Claim is a GPU or a port held by a running task, or a lock file that
// blocks it.
type Claim struct {
	Kind string `json:"kind"` // "gpu" or "port"
	ID   int    `json:"id"`   // the GPU index or the port
	// UUID is the GPU's, which names its lock file.
	UUID string `json:"uuid,omitempty"`
	// RunID and Task are the holder's label; empty when its command line
	// is not a tfhive task's or cannot be read (label unknown).
	RunID string `json:"run_id"`
	Task  string `json:"task"`
	// Priority is the run's --priority, by its holder's label ("low",
	// "high"; "" when normal or not a tfhive task's).
	Priority string `json:"priority,omitempty"`
	// Requeued is how often the run went back to the queue, preempted or
	// asking to (its holder's label; 0: never): ps's "resumed".
	Requeued int `json:"requeued,omitempty"`
	// User holds the claim, by the holding process's uid; "" when the
	// host hides other users' processes.
	User string `json:"user"`
	// UID is the holding process's real uid; it means something only
	// when the holder is known (RunID or User set).
	UID int `json:"-"`
	// PID is the holding process.
	PID   int       `json:"pid,omitempty"`
	Since time.Time `json:"since"`
	// Blocked, when set, says why nobody can claim it: a lock file that is
	// not a regular file or that tfhive may not read, and who owns it.
	Blocked string `json:"blocked,omitempty"`
	// File is the lock file, for messages.
	File string `json:"file,omitempty"`
}
