package schedule

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// notEnough explains a failed placement so that a person can act on it:
// how many GPUs were asked and found, and per host what was free and why the
// rest was not.
func notEnough(inv inventory.Inventory, st [][]GPUStatus, req *Request, ds []demand) error {
	e := &CapacityError{}
	reachable, maxOne, biggest := 0, 0, 0
	var waitable, threshold, excluded, unreachable bool
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		e.Lines = append(e.Lines, hostLine(h, st[i]))
		if !h.Reachable() {
			unreachable = true
			continue
		}
		reachable++
		free := 0
		for j, s := range st[i] {
			switch s.State {
			case Free:
				free++
			case Excluded:
				excluded = excluded || s.Reason == ReasonExcluded
			case Claimed, Intruder, Refused, Queued, Reserved:
				waitable = true
			case Busy:
				g := &h.GPUs[j]
				waitable = waitable || len(g.Processes) > 0
				threshold = threshold || (g.UtilizationPct != nil && *g.UtilizationPct > req.MaxUtilPct) ||
					(g.MemoryUsedMiB != nil && *g.MemoryUsedMiB > req.MaxMemMiB)
			}
		}
		e.Found += free
		maxOne = max(maxOne, free)
	}
	for _, d := range ds {
		e.Asked += d.gpus
		biggest = max(biggest, d.gpus)
	}
	if reachable == 0 {
		e.Asked, e.Found = 0, 0
		e.Msg = fmt.Sprintf("no reachable host: all %d hosts failed the probe", len(inv.Hosts))
		e.Fix = "fix access to the hosts below; tfhive status shows each one's state"
		return e
	}

	asked := fmt.Sprintf("asked %d (%s)", e.Asked, describeAsk(req))
	var fixes []string
	switch {
	case e.Found < e.Asked:
		e.Msg = fmt.Sprintf("not enough free GPUs: %s, found %d", asked, e.Found)
		fixes = append(fixes, "ask for fewer GPUs (--workers, --gpus-per-worker)")
	case maxOne < biggest:
		// Enough in total, but a task's GPUs must share a host.
		e.Msg = fmt.Sprintf("not enough free GPUs on one host: %s, found %d but at most %d free on any one host", asked, e.Found, maxOne)
		fixes = append(fixes, fmt.Sprintf("a task's GPUs must be on one host: ask for %d or fewer GPUs per task", maxOne))
	default:
		// Every task fits somewhere alone, but not all of them together.
		e.Msg = fmt.Sprintf("not enough free GPUs: %s, found %d but split across hosts so that the tasks do not fit", asked, e.Found)
		fixes = append(fixes, "ask for fewer tasks or fewer GPUs per task")
	}
	if threshold {
		fixes = append(fixes, "raise --max-util or --max-mem")
	}
	if excluded {
		fixes = append(fixes, "exclude fewer GPUs")
	}
	if waitable {
		fixes = append(fixes, "wait for busy GPUs to be released")
	}
	if unreachable {
		fixes = append(fixes, "fix the unreachable hosts")
	}
	e.Fix = joinOr(fixes)
	return e
}

// describeAsk spells out where the asked GPU count comes from, "4 workers × 2,
// 1 chief × 2", leaving out CPU roles.
func describeAsk(r *Request) string {
	var parts []string
	add := func(n int, one, many string, gpus int) {
		if n == 0 || gpus == 0 {
			return
		}
		name := many
		if n == 1 {
			name = one
		}
		parts = append(parts, fmt.Sprintf("%d %s × %d", n, name, gpus))
	}
	add(r.Workers, "worker", "workers", r.GPUsPerWorker)
	if r.Chief {
		add(1, "chief", "chiefs", r.GPUsPerWorker)
	}
	if r.Evaluator {
		add(1, "evaluator", "evaluators", r.GPUsPerWorker)
	}
	add(r.PS, "ps", "ps", r.GPUsPerPS)
	return strings.Join(parts, ", ")
}

// hostLine is one host's part of the explanation:
//
//	gpu01: 2 free (0,1); busy 2 (bob:1234 python), 3 (util 85% > 10%); excluded 4 (--exclude)
//	gpu03: unreachable: connection refused
func hostLine(h *inventory.HostInventory, st []GPUStatus) string {
	if note := hostNote(h); note != "" {
		return h.Name + ": " + note
	}
	var free []int
	for _, s := range st {
		if s.State == Free {
			free = append(free, s.Index)
		}
	}
	parts := []string{fmt.Sprintf("%d free", len(free))}
	if len(free) > 0 {
		parts[0] += " (" + joinInts(free) + ")"
	}
	for _, state := range []GPUState{Claimed, Intruder, Queued, Refused, Reserved, Blocked, Busy, Excluded} {
		if g := groupByReason(st, state); g != "" {
			parts = append(parts, string(state)+" "+g)
		}
	}
	return h.Name + ": " + strings.Join(parts, "; ")
}

// groupByReason lists GPUs in state as "2,3 (reason), 5 (other reason)",
// reasons in order of first appearance, so an 8-GPU host all busy for one
// reason takes one short clause.
func groupByReason(st []GPUStatus, state GPUState) string {
	var reasons []string
	byReason := map[string][]string{}
	for _, s := range st {
		if s.State != state {
			continue
		}
		if _, seen := byReason[s.Reason]; !seen {
			reasons = append(reasons, s.Reason)
		}
		byReason[s.Reason] = append(byReason[s.Reason], strconv.Itoa(s.Index))
	}
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = strings.Join(byReason[r], ",") + " (" + r + ")"
	}
	return strings.Join(out, ", ")
}

func joinOr(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + ", or " + xs[len(xs)-1]
}
