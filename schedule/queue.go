package schedule

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// QueueEntry is one waiting run, across the hosts where its ticket is.
type QueueEntry struct {
	inventory.Ticket
	Hosts []string `json:"hosts"`
	// Why it cannot start yet; "" when the GPUs free now would take it.
	Why string `json:"why,omitempty"`
}

// Queue gathers the tickets of every host into one order: priority, then
// waiting time, then name. Every waiter computes the same order from the
// same tickets.
func Queue(inv inventory.Inventory) []QueueEntry {
	byKey := map[string]int{}
	var q []QueueEntry
	for _, h := range inv.Hosts {
		for _, t := range h.Tickets {
			k := t.User + "\x00" + t.Name
			i, ok := byKey[k]
			if !ok {
				i = len(q)
				byKey[k] = i
				q = append(q, QueueEntry{Ticket: t})
			}
			// Each host dates the ticket by its holder there: the run
			// waits since its first.
			if t.Since.Before(q[i].Since) {
				q[i].Since = t.Since
			}
			if !slices.Contains(q[i].Hosts, h.Name) {
				q[i].Hosts = append(q[i].Hosts, h.Name)
			}
		}
	}
	slices.SortFunc(q, func(a, b QueueEntry) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), a.Since.Compare(b.Since), cmp.Compare(a.Name, b.Name), cmp.Compare(a.User, b.User))
	})
	return q
}

// applyQueue keeps for the runs waiting ahead of this request the free
// GPUs they could be placed on now, in their order (state Queued): a run
// behind may only backfill on what none of them can use. A request
// without QueueSince ignores the queue. Once the request holds tickets,
// its place is theirs, dated by the hosts as every other waiter dates it
// (QueueSince, this machine's clock when it began to wait, is only its
// place until then): two waiters must agree on which is ahead.
//
// A request with NoBackfill (a sweep's trial) backfills nowhere: for a run
// ahead that does not fit now, it keeps off every free GPU of the hosts
// that run could be placed on once enough of them free up. A sweep is a
// stream of runs: were each trial to take the GPU that one before it
// freed, a run ahead asking more GPUs than one trial frees at a time
// would wait as long as the sweep has trials. So the sweep's GPUs drain,
// one trial's end at a time, until that run fits.
//
// A run that has begun to let its GPUs go (Request.Ending) frees the rest
// of them in a moment: a run ahead that does not fit now but fits once
// they are free keeps what is free now of what it would take. Without
// that, the run behind took the GPUs of the first host to let go while
// the others were still ending, and the run first in line waited for it
// (issue 33, on loaded hosts: their tasks end seconds apart). So too a
// run ahead that is claiming: its claims taken so far count as its own
// (they would otherwise make it look too big for what is left free).
func applyQueue(inv inventory.Inventory, st [][]GPUStatus, req *Request) {
	soon := endingFreed(inv, st, req.Ending, req.Settling)
	keep := func(t [2]int, why string) {
		if st[t[0]][t[1]].State == Free {
			st[t[0]][t[1]] = GPUStatus{Index: st[t[0]][t[1]].Index, State: Queued, Reason: why}
		}
		if soon != nil {
			soon[t[0]][t[1]] = GPUStatus{Index: soon[t[0]][t[1]].Index, State: Queued, Reason: why}
		}
	}
	for _, e := range Ahead(inv, *req) {
		why := fmt.Sprintf("kept for run %s (%s, %s, waiting since %s)", e.RunID, e.User, e.Priority, e.Since.Format("15:04:05 UTC"))
		taken, ok := fitTicket(inv, st, e)
		if !ok {
			// A run ahead that has begun to claim keeps its tickets until
			// every task holds its claims: what it holds already is its
			// own, and it takes the rest of what is free in a moment.
			if own := endingFreed(inv, st, map[string]bool{EndingKey(e.User, e.RunID): true}, nil); own != nil {
				taken, ok = fitTicket(inv, own, e)
			}
		}
		if !ok && soon != nil {
			if later, fits := fitTicket(inv, soon, e); fits {
				for _, t := range later {
					keep(t, why+": it fits once the runs letting go of their GPUs have")
				}
				continue
			}
		}
		if !ok {
			if req.NoBackfill {
				keepForLater(inv, st, e, why+": a sweep's trial does not backfill")
			}
			continue
		}
		for _, t := range taken {
			keep(t, why)
		}
	}
}

// EndingKey names a run in Request.Ending: its user and id, as its
// claims say them.
func EndingKey(user, runID string) string { return user + "\x00" + runID }

// endingFreed is st with the GPUs that the runs named (EndingKey) hold
// free, and those settling (Request.Settling), nil when none of st's GPUs
// is either.
func endingFreed(inv inventory.Inventory, st [][]GPUStatus, ending map[string]bool, settling map[string][]int) [][]GPUStatus {
	if len(ending) == 0 && len(settling) == 0 {
		return nil
	}
	var soon [][]GPUStatus
	for i, gs := range st {
		for j, g := range gs {
			if g.State != Claimed {
				continue
			}
			c := claimOf(&inv.Hosts[i], "gpu", g.Index)
			switch {
			case c == nil:
				continue
			case c.RunID == "" && !slices.Contains(settling[inv.Hosts[i].Name], g.Index):
				continue
			case c.RunID != "" && !ending[EndingKey(c.User, c.RunID)]:
				continue
			}
			if soon == nil {
				soon = make([][]GPUStatus, len(st))
				for k := range st {
					soon[k] = slices.Clone(st[k])
				}
			}
			soon[i][j] = GPUStatus{Index: g.Index, State: Free}
		}
	}
	return soon
}

// keepForLater keeps, for a ticket that does not fit now, the free GPUs
// of each of its hosts that could ever hold its largest task (as many
// GPUs there, and, for a ticket labelled high, a policy that lets its
// user use --priority high: see fitTicket).
func keepForLater(inv inventory.Inventory, st [][]GPUStatus, e QueueEntry, why string) {
	largest := 0
	for _, n := range e.Shape {
		largest = max(largest, n)
	}
	if largest == 0 {
		return
	}
	for i, h := range inv.Hosts {
		if !slices.Contains(e.Hosts, h.Name) || len(st[i]) < largest || e.Priority == PriorityHigh && !mayUseHigh(&inv.Hosts[i], e.User) {
			continue
		}
		for j, s := range st[i] {
			if s.State == Free {
				st[i][j] = GPUStatus{Index: s.Index, State: Queued, Reason: why}
			}
		}
	}
}

// Ahead is the runs waiting ahead of req, in the queue's order: req's
// place is its tickets' once inv shows them, else QueueSince (see
// applyQueue). A request without QueueSince is in no queue: nil.
func Ahead(inv inventory.Inventory, req Request) []QueueEntry {
	if req.QueueSince.IsZero() {
		return nil
	}
	q := Queue(inv)
	mine := inventory.Ticket{Rank: PriorityRank(req.Priority), Since: req.QueueSince.Truncate(time.Millisecond), Name: "\xff"}
	for _, e := range q {
		if e.RunID == req.RunID && e.Rank == mine.Rank {
			mine.Since = e.Since
			break
		}
	}
	var ahead []QueueEntry
	for _, e := range q {
		if e.RunID == req.RunID || cmp.Or(cmp.Compare(e.Rank, mine.Rank), e.Since.Compare(mine.Since)) >= 0 {
			continue
		}
		ahead = append(ahead, e)
	}
	return ahead
}

// fitTicket places a ticket's tasks, largest first, each on the first of
// its hosts with enough free GPUs; ok false when one does not fit. A
// ticket labelled high counts only where its user may use --priority high:
// anyone can hold a lock whose label says high, and a run the policy
// refuses would otherwise keep the GPUs from the runs it allows.
func fitTicket(inv inventory.Inventory, st [][]GPUStatus, e QueueEntry) (taken [][2]int, ok bool) {
	used := map[[2]int]bool{}
	shape := slices.Clone(e.Shape)
	slices.SortFunc(shape, func(a, b int) int { return cmp.Compare(b, a) })
	for _, n := range shape {
		if n == 0 {
			continue
		}
		placed := false
		for i, h := range inv.Hosts {
			if !slices.Contains(e.Hosts, h.Name) || st[i] == nil || e.Priority == PriorityHigh && !mayUseHigh(&inv.Hosts[i], e.User) {
				continue
			}
			var free [][2]int
			for j, s := range st[i] {
				// A MIG instance is only a one-GPU task's (mig.go).
				if s.State == Free && !used[[2]int{i, j}] && (n == 1 || h.GPUs[j].MIGInstance == nil) {
					free = append(free, [2]int{i, j})
				}
			}
			if len(free) >= n {
				for _, x := range free[:n] {
					used[x] = true
					taken = append(taken, x)
				}
				placed = true
				break
			}
		}
		if !placed {
			return nil, false
		}
	}
	return taken, true
}

// QueueWhy is the queue with why each run cannot start yet, as every
// waiter sees it: the runs ahead take, in turn, the free GPUs they fit on.
func QueueWhy(inv inventory.Inventory) []QueueEntry {
	q := Queue(inv)
	// Before reservations, which each waiter sees as its own user does
	// (othersReserved): Classify's are the viewer's.
	st := classify(inv, Availability{MaxUtilPct: DefaultMaxUtilPct, MaxMemMiB: DefaultMaxMemMiB})
	capSlots(inv, st)
	for i := range q {
		mine := othersReserved(inv, st, q[i].User)
		free := 0
		for hi, h := range inv.Hosts {
			if slices.Contains(q[i].Hosts, h.Name) {
				for _, s := range mine[hi] {
					if s.State == Free {
						free++
					}
				}
			}
		}
		taken, ok := fitTicket(inv, mine, q[i])
		if ok {
			q[i].Why = "GPUs free now: starting at its next probe"
			for _, t := range taken {
				st[t[0]][t[1]].State = Queued
			}
			continue
		}
		need := 0
		for _, g := range q[i].Shape {
			need += g
		}
		q[i].Why = fmt.Sprintf("needs %d GPUs (%s per task), %d free on its hosts after the runs ahead", need, ShapeString(q[i].Shape), free)
	}
	return q
}

// ShapeString is a run's GPUs per task, as "1+2+2".
func ShapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, g := range shape {
		parts[i] = fmt.Sprint(g)
	}
	return strings.Join(parts, "+")
}
