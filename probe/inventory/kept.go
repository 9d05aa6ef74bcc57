package inventory

// KeptRuns is what a host's run directories (~/.tfhive/runs/RUN, of the
// user tfhive logs in as) say of the kept runs whose claims are held
// there: enough for `tfhive ps` to tell a run's state and whether a
// keeper follows it. Only directories of the user's own with mode 0700,
// none a symlink, are read: nothing another user wrote is in it.
type KeptRuns struct {
	// UID is the user's, as the host knows it: only claims held by this
	// uid are the runs described.
	UID   int
	Tasks []KeptTask
	// Now is the host's clock (epoch seconds) as the probe read it.
	Now int64
}

// KeptTask is one task's files in its run's directory.
type KeptTask struct {
	RunID string
	Task  string // worker:0
	// Started: its supervisor has started the task (its pid file names
	// the task's output loggers, started once every task held its claims).
	Started bool
	// Ended: the task's status is written.
	Ended bool
	// Followed: a session's feeder holds a lock on the task's control
	// FIFO (in /proc/locks): a session is attached to the task.
	Followed bool
	// Fresh: a control line (a keeper's heartbeat, at least every
	// keepalive interval) reached the FIFO within the keepalive window.
	Fresh bool
	// IdleSince: the task's GPUs have been idle past the idle rule's
	// warning since then (epoch seconds, the host's clock); 0: not.
	IdleSince int64
}

// GPUUse is one GPU's live utilisation, as one row of nvidia-smi
// --query-gpu=index,uuid,utilization.gpu,memory.used reports it.
type GPUUse struct {
	Index  int     `json:"gpu"`
	UUID   string  `json:"uuid"`
	Util   float64 `json:"util_pct"`
	MemMiB float64 `json:"mem_mib"`
}
