package record

import (
	"time"
)

// GPUUsage is a task's GPU usage over the run, from --sample: utilisation
// in percent and memory used in MiB, over every sample of every GPU of
// the task.
type GPUUsage struct {
	Samples  int     `json:"samples"`
	UtilMean float64 `json:"util_mean_pct"`
	UtilP95  float64 `json:"util_p95_pct"`
	UtilPeak float64 `json:"util_peak_pct"`
	MemMean  float64 `json:"mem_mean_mib"`
	MemP95   float64 `json:"mem_p95_mib"`
	MemPeak  float64 `json:"mem_peak_mib"`
	// Idle says how long the task's GPUs were idle, when that lasted long
	// enough to warn about: "GPU idle (2%) for 3m".
	Idle string `json:"idle,omitempty"`
}

// Intruder is a process --sample saw on one of a task's GPUs that was not
// the run's: another user's job, or one started by hand beside the run.
// It is reported, never signalled.
type Intruder struct {
	GPU     int       `json:"gpu"`
	PID     int       `json:"pid"`
	User    string    `json:"user"`
	Command string    `json:"command"`
	Seen    time.Time `json:"first_seen"`
}
