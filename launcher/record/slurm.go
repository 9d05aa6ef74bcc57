package record

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
}
