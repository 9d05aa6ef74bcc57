package lifecycle

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// ClaimConflictError: another run took a GPU or port of this plan between
// the probe and the start. Nothing was started; main plans again.
type ClaimConflictError struct{ Conflicts []string }

func (e *ClaimConflictError) Error() string {
	return "claimed by another run while starting: " + strings.Join(e.Conflicts, "; ")
}

// QueuedSinceError: the plan was made on an older probe than the run's
// own (a sweep's trial on the newest coalesced probe), and a run began to
// wait on these hosts since: its turn may be ahead of this one's, which
// only a new probe can tell. Nothing was started; the run plans again at
// once, on a probe begun after.
type QueuedSinceError struct{ Hosts []string }

func (e *QueuedSinceError) Error() string {
	return "a run queued on " + strings.Join(e.Hosts, ", ") + " since the probe this start was planned on: planning again"
}

// ClaimBlockedError: a lock file on a host is not one tfhive can use (not
// a regular file, or not readable), put there by someone else. Trying
// again cannot help; its owner or root must remove it.
type ClaimBlockedError struct{ Blocked []string }

func (e *ClaimBlockedError) Error() string {
	return strings.Join(e.Blocked, "; ") + "; ask its owner or root to remove it"
}

// describeClaims: "gpu 0, gpu 1, port 2222".
func describeClaims(cs []inventory.Claim) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %d", c.Kind, c.ID))
	}
	return "(one of " + strings.Join(parts, ", ") + ")"
}

// Claims names what the task holds on its host: its GPUs (by UUID,
// which outlives a renumbering) and its port (for torch, rank 0 holds
// MASTER_PORT; the other ranks have no port), or, with neither, the
// task claim (claim.KindTask).
func Claims(t schedule.Task) []inventory.Claim {
	var c []inventory.Claim
	for i, g := range t.GPUs {
		// The UUID names a file on the host: one nvidia-smi printed with
		// anything but letters, digits and '-' is not used (the index is).
		uuid := ""
		if i < len(t.GPUUUIDs) && claim.ValidUUID(t.GPUUUIDs[i]) {
			uuid = t.GPUUUIDs[i]
		}
		c = append(c, inventory.Claim{Kind: "gpu", ID: g, UUID: uuid})
	}
	if t.Port > 0 {
		c = append(c, inventory.Claim{Kind: "port", ID: t.Port})
	}
	if p, err := strconv.Atoi(t.Env["MASTER_PORT"]); err == nil && t.Env["RANK"] == "0" {
		c = append(c, inventory.Claim{Kind: "port", ID: p})
	}
	if len(c) == 0 {
		// A torch rank on CPUs: a claim of nothing, so that it has a
		// holder ps, top and kill find (claim.KindTask).
		c = append(c, inventory.Claim{Kind: claim.KindTask})
	}
	return c
}
