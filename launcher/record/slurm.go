package record

import "time"

// SlurmJob is the Slurm job a `tfhive run --on slurm` submitted: in its
// summary and, from its submission on, in slurm.json of its log dir,
// which attach, wait, logs and kill read.
type SlurmJob struct {
	JobID string `json:"job_id"`
	// Login is the login node's name as the hosts file or -H gave it,
	// Dir the run's directory there (the batch script, the job's output).
	Login  string `json:"login"`
	Dir    string `json:"dir"`
	Output string `json:"output"`
	// State and ExitCode are Slurm's own words for the job's end
	// ("FAILED", "7:0"), from sacct; empty while it runs.
	State    string `json:"state,omitempty"`
	ExitCode string `json:"exit_code,omitempty"`
	// Array is a sweep's job array size; 0 for one job.
	Array int `json:"array,omitempty"`
	// Tasks are the job's tasks as the script places them, for a tfhive
	// that follows the job again (attach -H); Submitted is when it was
	// submitted. Both absent in a summary's trial of a sweep.
	Tasks     []SlurmTask `json:"tasks,omitempty"`
	Submitted time.Time   `json:"submitted,omitzero"`
}

// SlurmTask is one task of a Slurm job as its batch script places it.
type SlurmTask struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Index int    `json:"index"`
	// Node is the task's node, numbered in SLURM_JOB_NODELIST's order.
	Node int   `json:"node"`
	GPUs []int `json:"gpus"`
}
