package record

import (
	"time"
)

// Attempt is one run of a task (tfhive run --restarts): in the summary,
// every attempt of every task, the last one included.
type Attempt struct {
	Attempt  int           `json:"attempt"`
	Outcome  string        `json:"outcome"`
	ExitCode *int          `json:"exit_code"`
	Duration time.Duration `json:"duration_ns"`
	// Restart says why the task was started again after it; empty for
	// the last attempt.
	Restart string `json:"restart,omitempty"`
	// Host is where it ran, when not on the task's host: before a lost
	// host made tfhive start the run again on a new plan (lifecycle.Relaunch).
	Host string `json:"host,omitempty"`
}
