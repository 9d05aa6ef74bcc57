package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// GPUState is whether a GPU may be given to a task.
type GPUState string

const (
	// Free GPUs may be used.
	Free GPUState = "free"
	// Busy GPUs are in use by someone else, now: waiting may free them.
	Busy GPUState = "busy"
	// Excluded GPUs were taken out by configuration (hosts file gpus:,
	// --exclude, MIG): waiting will not free them.
	Excluded GPUState = "excluded"
	// Claimed GPUs are held by a tfhive run's task, possibly one that has
	// not allocated GPU memory yet (nvidia-smi still says idle).
	Claimed GPUState = "claimed"
	// Blocked GPUs have a lock file on their host that tfhive cannot use
	// (another user's unreadable file, a symlink): only its owner or root
	// can free them.
	Blocked GPUState = "blocked"
	// Intruder GPUs are claimed by a tfhive run and also run a process
	// that is not the run's (probe: not a descendant of the claim's
	// holder). Reported only: tfhive kills nothing.
	Intruder GPUState = "intruder"
	// Refused GPUs are free, but a rule of their host's policy keeps them
	// from this request (policy.go).
	Refused GPUState = "policy"
	// Queued GPUs are free, but kept for a run waiting ahead (queue.go).
	Queued GPUState = "queued"
)

// GPUStatus is one GPU's state and, unless free, why.
type GPUStatus struct {
	Index  int      `json:"index"`
	State  GPUState `json:"state"`
	Reason string   `json:"reason,omitempty"`
}

// Availability decides which GPUs count as free.
type Availability struct {
	// A GPU whose utilization or used memory is above these is busy. Both
	// are inclusive limits: util == MaxUtilPct is still free.
	MaxUtilPct int
	MaxMemMiB  int
	Exclude    Exclusions
}

// Reasons a GPU is excluded; tests and callers may compare against them.
const (
	ReasonMIG       = "MIG enabled"
	ReasonNotListed = "not in hosts file gpus:"
	ReasonExcluded  = "--exclude"
	// ReasonSlots is a format: the hostfile's slot count.
	ReasonSlots = "beyond the hostfile's slots=%d"
	// ReasonRanks and ReasonFewRanks are formats: --nproc-per-node's
	// GPUs (and its ranks).
	ReasonRanks    = "beyond --nproc-per-node %d"
	ReasonFewRanks = "host has fewer than the %d free GPUs --nproc-per-node %d needs"
)

// maxCommandInReason keeps a busy reason to one readable line; ps gives
// whole command lines, which can run to kilobytes.
const maxCommandInReason = 40

// Classify gives every GPU of every host a state. result[i] belongs to
// inv.Hosts[i] and lists its GPUs in inventory order; unreachable hosts get
// nil. Exclusions are checked before busyness, so a GPU the user took out is
// shown as excluded even when it is also busy: that is the reason that will
// not go away by waiting.
//
// A hostfile's slots=N (Host.Slots) keeps N of a host's free GPUs free and
// excludes the rest (capSlots).
func Classify(inv inventory.Inventory, a Availability) [][]GPUStatus {
	st := classify(inv, a)
	// What status shows: a GPU another user's reservation holds now is
	// reserved (a window of a nanosecond from the probe: one ahead is a
	// plan's business, which knows the run's --timeout).
	applyReservations(inv, st, &Request{Timeout: time.Nanosecond})
	capSlots(inv, st)
	return st
}

// classify is Classify before the slots cap, which a plan applies after
// the policies and the queue have taken their GPUs out: slots=N is N of
// the GPUs this run may have.
func classify(inv inventory.Inventory, a Availability) [][]GPUStatus {
	out := make([][]GPUStatus, len(inv.Hosts))
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		if !h.Reachable() {
			continue
		}
		st := make([]GPUStatus, len(h.GPUs))
		for j := range h.GPUs {
			st[j] = classifyGPU(h, &h.GPUs[j], a)
		}
		out[i] = st
	}
	return out
}

// capSlots keeps the first N free GPUs of each host with a hostfile's
// `host slots=N` free and excludes the others: N is the most GPUs a run
// uses there (0: no cap). Busy and claimed GPUs do not count against it:
// the cap is on what this run takes.
func capSlots(inv inventory.Inventory, st [][]GPUStatus) {
	for i := range inv.Hosts {
		slots, free := inv.Hosts[i].Host.Slots, 0
		if slots <= 0 {
			continue
		}
		for j := range st[i] {
			if st[i][j].State != Free {
				continue
			}
			if free++; free > slots {
				st[i][j] = GPUStatus{Index: st[i][j].Index, State: Excluded, Reason: fmt.Sprintf(ReasonSlots, slots)}
			}
		}
	}
}

// shapeHosts makes every host offer exactly ranks×gpus free GPUs or none,
// for torchrun's --nproc-per-node (ranks; 0: nothing to do): a host with
// fewer free is passed over, one with more keeps its first ranks×gpus
// free. Packing then fills each host it uses with exactly ranks ranks.
func shapeHosts(inv inventory.Inventory, st [][]GPUStatus, ranks, gpus int) {
	if ranks <= 0 || gpus <= 0 {
		return
	}
	want := ranks * gpus
	for i := range inv.Hosts {
		free := 0
		for _, s := range st[i] {
			if s.State == Free {
				free++
			}
		}
		reason := fmt.Sprintf(ReasonRanks, ranks)
		if free < want {
			reason = fmt.Sprintf(ReasonFewRanks, want, ranks)
		}
		seen := 0
		for j := range st[i] {
			if st[i][j].State != Free {
				continue
			}
			if seen++; free < want || seen > want {
				st[i][j] = GPUStatus{Index: st[i][j].Index, State: Excluded, Reason: reason}
			}
		}
	}
}

func classifyGPU(h *inventory.HostInventory, g *inventory.GPU, a Availability) GPUStatus {
	s := GPUStatus{Index: g.Index, State: Excluded}
	c := claimOf(h, "gpu", g.Index)
	switch {
	case g.MIG:
		// A GPU in MIG mode is used through its instances' UUIDs (mig.go):
		// its index would give a task the whole card, which CUDA cannot use.
		s.Reason = migParentReason(h, g)
	case g.MIGInstance != nil && g.MIGInstance.Unusable != "":
		s.Reason = "MIG instance: " + g.MIGInstance.Unusable
	case h.Host.GPUs != nil && !slices.Contains(h.Host.GPUs, g.Index) && (g.MIGInstance == nil || !slices.Contains(h.Host.GPUs, g.MIGInstance.Parent)):
		// An instance is listed by its own index or its GPU's.
		s.Reason = ReasonNotListed
	case sameUUID(h, g) >= 0:
		// Claims are named by UUID: two GPUs under one would share one
		// claim, each run's claim of one failing as "taken" by the other.
		s.Reason = fmt.Sprintf("nvidia-smi gives GPU %d the same UUID (%s): a claim could not tell them apart", sameUUID(h, g), g.UUID)
	case a.Exclude.Has(h.Name, g.Index) || g.MIGInstance != nil && a.Exclude.Has(h.Name, g.MIGInstance.Parent):
		s.Reason = ReasonExcluded
	case c != nil && c.Blocked != "":
		s.State, s.Reason = Blocked, c.Blocked+"; ask its owner or root to remove it"
	case c != nil:
		s.State, s.Reason = Claimed, claimReason(c)
		var in []inventory.Process
		for _, p := range g.Processes {
			if p.Intruder {
				in = append(in, p)
			}
		}
		if len(in) > 0 {
			s.State, s.Reason = Intruder, processReason(in)+" on the GPU of "+s.Reason
		}
	default:
		var why []string
		if len(g.Processes) > 0 {
			why = append(why, processReason(g.Processes))
		}
		// nil means nvidia-smi could not tell; treating that as busy would
		// make some GPU models (no utilization counter) never usable.
		if g.UtilizationPct != nil && *g.UtilizationPct > a.MaxUtilPct {
			why = append(why, fmt.Sprintf("util %d%% > %d%%", *g.UtilizationPct, a.MaxUtilPct))
		}
		if g.MemoryUsedMiB != nil && *g.MemoryUsedMiB > a.MaxMemMiB {
			why = append(why, fmt.Sprintf("mem %d MiB > %d MiB", *g.MemoryUsedMiB, a.MaxMemMiB))
		}
		if len(why) == 0 {
			return GPUStatus{Index: g.Index, State: Free}
		}
		s.State, s.Reason = Busy, strings.Join(why, ", ")
	}
	return s
}

// sameUUID is the index of another GPU of h that nvidia-smi reports
// with g's UUID, or -1.
func sameUUID(h *inventory.HostInventory, g *inventory.GPU) int {
	if g.UUID == "" {
		return -1
	}
	for _, o := range h.GPUs {
		if o.Index != g.Index && o.UUID == g.UUID {
			return o.Index
		}
	}
	return -1
}

// processReason names the first process as user:pid command, which is what
// a person needs to go and ask someone.
func processReason(ps []inventory.Process) string {
	p := ps[0]
	user := p.User
	if user == "" {
		user = "?" // as `tfhive status` shows it
	}
	who := fmt.Sprintf("%s:%d", user, p.PID)
	if cmd := strings.Join(strings.Fields(p.Command), " "); cmd != "" {
		if r := []rune(cmd); len(r) > maxCommandInReason {
			cmd = string(r[:maxCommandInReason-1]) + "…"
		}
		who += " " + cmd
	}
	if len(ps) > 1 {
		who += fmt.Sprintf(" +%d more", len(ps)-1)
	}
	return who
}

// claimOf finds the claim held on a GPU or port of h, or the lock file
// that blocks it; a held claim wins over a blocking file.
func claimOf(h *inventory.HostInventory, kind string, id int) *inventory.Claim {
	var blocked *inventory.Claim
	for i := range h.Claims {
		if c := &h.Claims[i]; c.Kind == kind && c.ID == id {
			if c.Blocked == "" {
				return c
			}
			blocked = c
		}
	}
	return blocked
}

// claimReason says whose run holds it: "run r1 (alice, worker:0, since
// 2026-11-22 15:04 UTC)". The time is absolute: schedule has no clock.
// It is written into one buffer: a plan words every claimed GPU of the
// fleet.
func claimReason(c *inventory.Claim) string {
	var b strings.Builder
	b.Grow(len(c.RunID) + len(c.User) + len(c.Task) + 64)
	if c.RunID == "" {
		// The kernel says someone holds it; its label could not be read.
		b.WriteString("a holder with no tfhive label")
	} else {
		b.WriteString("run ")
		b.WriteString(c.RunID)
	}
	sep := " ("
	for _, x := range [...]string{c.User, c.Task} {
		if x != "" {
			b.WriteString(sep)
			b.WriteString(x)
			sep = ", "
		}
	}
	if !c.Since.IsZero() {
		var t [32]byte
		b.WriteString(sep)
		b.WriteString("since ")
		b.Write(c.Since.UTC().AppendFormat(t[:0], "2006-01-02 15:04 UTC"))
		sep = ", "
	}
	if sep == ", " {
		b.WriteByte(')')
	}
	return b.String()
}
