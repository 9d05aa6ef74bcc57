package inventory

import (
	"slices"
	"time"
)

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

// IdleFor is how long the run's tasks here (of the user uid, the tasks
// its claims name) have been idle past the idle rule's warning, by the
// host's clock: when every one that has not ended is idle, for the
// shortest of their stretches. false: not idle, not the user's own run,
// or nothing to tell by (a file missing or malformed reads as busy).
func (k *KeptRuns) IdleFor(uid int, run string, tasks []string) (time.Duration, bool) {
	if k == nil || run == "" || uid != k.UID || k.Now == 0 {
		return 0, false
	}
	var since int64
	for _, t := range k.Tasks {
		if t.RunID != run || t.Ended || !slices.Contains(tasks, t.Task) {
			continue
		}
		if t.IdleSince == 0 {
			return 0, false
		}
		since = max(since, t.IdleSince)
	}
	if since == 0 {
		return 0, false
	}
	return time.Duration(max(k.Now-since, 0)) * time.Second, true
}
