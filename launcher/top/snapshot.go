package top

import (
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// Snapshot is what one refresh saw.
type Snapshot struct {
	At time.Time
	// Inv is the probe's inventory and Status its GPUs' states
	// (schedule.Classify), Status[i] for Inv.Hosts[i].
	Inv    inventory.Inventory
	Status [][]schedule.GPUStatus
	// Queue is the runs waiting for GPUs, in the order they will start
	// (schedule.QueueWhy).
	Queue []schedule.QueueEntry
	// Mine are the user's runs: those of the local log root, and those
	// holding claims on the hosts as the user.
	Mine []Run
	// Err, when set, is why this refresh saw nothing (a host's malformed
	// policy): said on the screen, the last good snapshot kept.
	Err error
	// Warning is the last warning the refresh gave (a host's policy
	// file, a new host key accepted): said in the footer.
	Warning string
}

// Run is one of the user's runs.
type Run struct {
	ID string
	// State is the log root's result (running, succeeded, failed, …,
	// view.ResultRunning and view.ResultUnknown) or, for a run known
	// only from the hosts, what ps says (hostops.RunRunning, …).
	State string
	Hosts []string // where it holds claims
	GPUs  int      // how many GPUs it holds
	Since time.Time
	// Metric is its latest captured values ("loss=0.25 acc=0.91"), ""
	// when it captures nothing (yet).
	Metric string
	// LogDir is its local log dir; "" when it has none here.
	LogDir string
	// Live: it holds claims on the hosts, so stopping it means something.
	Live bool
	// Idle is what ps says of its GPUs idle past the warning on a host
	// ("idle 37m"); "" when none is.
	Idle string
	// Requeued is how often the run went back to the queue (ps's
	// "resumed (attempt 2)"); 0: never.
	Requeued int
}

// gpuCount counts the GPUs of the hosts that answered, and the free ones.
func (s *Snapshot) gpuCount() (total, free int) {
	for i, h := range s.Inv.Hosts {
		if h.Err != nil || i >= len(s.Status) {
			continue
		}
		for j, st := range s.Status[i] {
			// A GPU in MIG mode is counted as its instances, which
			// follow it: tasks are given those, never it.
			if j < len(h.GPUs) && h.GPUs[j].MIG {
				continue
			}
			total++
			if st.State == schedule.Free {
				free++
			}
		}
	}
	return total, free
}
