package commands

import (
	"fmt"

	"github.com/tfhive/tfhive/probe/inventory"
)

// nameInUse refuses a run's first start under an id that a run of the same
// user still holds claims under on some host: a --name used again while
// the earlier run of that name goes on. The claims are the kernel's word
// (their holders' locks and command lines), not a file's. A name whose
// run has ended is free: the host's multiplexer then empties what that
// run left in the run's directory (scripts/mux.sh), and a task that
// holds no claim yet still runs is refused there.
func nameInUse(inv inventory.Inventory, runID string) error {
	for _, h := range inv.Hosts {
		for _, c := range h.Claims {
			if c.RunID != runID || c.Blocked != "" || c.User == "" || c.User != h.Host.User {
				continue
			}
			what := fmt.Sprintf("GPU %d", c.ID)
			if c.Kind == "port" {
				what = fmt.Sprintf("port %d", c.ID)
			}
			return &UsageError{
				Msg: fmt.Sprintf("run name %s is in use: that run still runs on %s (its %s holds %s)", runID, h.Name, c.Task, what),
				Fix: fmt.Sprintf("stop it first (tfhive kill %s), or choose another --name", runID),
			}
		}
	}
	return nil
}
