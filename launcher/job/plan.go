package job

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// Planner makes the plan from a probe's inventory: schedule.Make, or for
// a sweep's trial one that keeps off its siblings' GPUs.
type Planner func(inventory.Inventory, schedule.Request) (*schedule.Plan, error)

// plan is the attempt's first step: probe, plan (keeping off the ports
// earlier plans gave, after a lost host), and refuse a run id another
// run of the user's still runs as.
func (r *run) plan(ctx context.Context) (*schedule.Plan, inventory.Inventory, error) {
	var avoid map[string][]int
	if r.lo.Relaunch != nil {
		avoid = r.used
	}
	plan, inv, err := ProbeAndPlan(ctx, r.spec.Fleet, r.req, r.spec.Notes, avoid, r.mk)
	r.lastInv = inv
	if !r.started {
		// Once this run has started, its id's claims may be its own.
		if used := nameInUse(inv, r.req.RunID); used != nil {
			return nil, inv, used
		}
	}
	if err != nil {
		return nil, inv, err
	}
	r.waited()
	planPorts(plan, r.used)
	r.lo.Priority, r.lo.Preemptible = r.req.Priority, schedule.PreemptibleBy(inv, r.req.Priority)
	r.lo.Idle = schedule.IdleRules(inv, r.lo.IdleStop)
	r.lo.SeenTickets = seenTickets(inv)
	return plan, inv, nil
}

// seenTickets is, for a plan on an older probe (Seeded), the holders of
// the waiting tickets it saw, by host: the supervisors' claim check ends
// a start whose turn a run queued since may be owed
// (launcher.Options.SeenTickets).
// Nil for a probe of the run's own.
func seenTickets(inv inventory.Inventory) map[string][]int {
	if !inv.Seeded {
		return nil
	}
	seen := make(map[string][]int, len(inv.Hosts))
	for _, h := range inv.Hosts {
		pids := []int{}
		for _, t := range h.Tickets {
			pids = append(pids, t.PID)
		}
		seen[h.Name] = pids
	}
	return seen
}

// ProbeAndPlan is the shared first half of plan and run: probe every host
// once, plan (with mk), and say on notes which hosts the plan had to do
// without. The inventory is the probe's, for --check. avoid are ports to
// keep off as if something listened there (a re-plan's earlier ports).
func ProbeAndPlan(ctx context.Context, fleet Fleet, req schedule.Request, notes io.Writer, avoid map[string][]int, mk Planner) (*schedule.Plan, inventory.Inventory, error) {
	inv, err := fleet.Probe(ctx)
	if err != nil {
		return nil, inv, err
	}
	for i, h := range inv.Hosts {
		inv.Hosts[i].ListeningPorts = append(slices.Clone(h.ListeningPorts), avoid[h.Name]...)
	}
	// With no host reached there is no capacity to speak of: that is
	// exit 4 with each host's reason, not "not enough GPUs".
	if e, ok := Unreachable(inv).(*UnreachableError); ok && e.Bad == e.Total {
		return nil, inv, e
	}
	plan, err := mk(inv, req)
	if err != nil {
		return nil, inv, err
	}
	for _, h := range inv.Hosts {
		if h.Err != nil {
			fmt.Fprintf(notes, "tfhive: warning: %s not used: %s\n", h.Name, h.Err.Message)
		}
	}
	return plan, inv, nil
}

// planPorts adds the ports plan gives to used, by host: each task's, and
// a torch world's MASTER_PORT on rank 0's host.
func planPorts(plan *schedule.Plan, used map[string][]int) {
	for _, t := range plan.Tasks {
		if t.Port > 0 {
			used[t.Host] = append(used[t.Host], t.Port)
		}
		if _, port, err := net.SplitHostPort(plan.Master); err == nil && t.Env["RANK"] == "0" {
			if p, err := strconv.Atoi(port); err == nil {
				used[t.Host] = append(used[t.Host], p)
			}
		}
	}
}

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

// BookPlanner plans a sweep's trial on its probe as book shows it: its
// siblings' GPUs and ports taken, its own entered before it claims them.
func BookPlanner(book *sweep.Book) Planner {
	return func(inv inventory.Inventory, req schedule.Request) (*schedule.Plan, error) {
		var plan *schedule.Plan
		err := book.Place(req.RunID, inv, func(seen inventory.Inventory) (sweep.Places, error) {
			p, err := schedule.Make(seen, req)
			if err != nil {
				return nil, err
			}
			plan = p
			// What its tasks will claim: GPUs and ports.
			places := sweep.Places{}
			for _, t := range p.Tasks {
				places[t.Host] = append(places[t.Host], lifecycle.Claims(t)...)
			}
			return places, nil
		})
		return plan, err
	}
}
