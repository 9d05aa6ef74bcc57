package record

import (
	"time"
)

// RunInfo is what a kept run's hosts keep of it (run.json, written by the
// first task's supervisor on each host): enough for the lifecycle.
type RunInfo struct {
	RunID     string        `json:"run_id"`
	Framework string        `json:"framework"`
	Chief     bool          `json:"chief"`
	Tasks     []RunInfoTask `json:"tasks"`
	// Restart is the run's --restarts policy and its attempt lines' word;
	// absent without --restarts.
	Restart *RunInfoRestart `json:"restart,omitempty"`
}

// RunInfoRestart is a RunInfo's restart policy.
type RunInfoRestart struct {
	Max     int           `json:"max"`
	On      string        `json:"on,omitempty"`
	Backoff time.Duration `json:"backoff_ns"`
	Mark    string        `json:"mark"`
}

// RunInfoTask is one task of a RunInfo.
type RunInfoTask struct {
	ID   string `json:"id"`
	GPUs []int  `json:"gpus"`
}
