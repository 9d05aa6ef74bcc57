package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// queue is what an attempt that did not fit does while the run waits:
// it holds its place in the hosts' queue with tickets (once, for the
// whole wait), and a --priority high run asks the low runs in its way to
// stop.
func (r *run) queue(ctx context.Context, inv inventory.Inventory, err error) {
	if !r.queued() || !errors.As(err, new(*schedule.CapacityError)) {
		return
	}
	if r.tickets == nil {
		requeued := 0
		if r.lo.Relaunch != nil {
			requeued = r.lo.Relaunch.Requeues
		}
		r.tickets = hostops.HoldTickets(ctx, execList(r.spec.Fleet), r.req, requeued, r.wake)
	}
	r.preempt(ctx, inv)
}

// queued: the run waits its turn for GPUs (--wait, or a sweep's trial).
func (r *run) queued() bool { return r.spec.Wait > 0 || r.spec.WaitForever }

// preempt asks, for a waiting --priority high run, the fewest low runs
// whose GPUs would let it start to stop, on hosts whose policy allows it
// (schedule.Preemptions): their own supervisors stop them. A victim is
// asked once; its GPUs freed, the next attempt starts the run.
func (r *run) preempt(ctx context.Context, inv inventory.Inventory) {
	vs := schedule.Preemptions(inv, r.req)
	if len(vs) == 0 {
		return
	}
	notes := r.spec.Notes
	warn := func(s string) { fmt.Fprintf(notes, "tfhive: warning: %s\n", s) }
	for _, v := range r.tickets.Preempt(ctx, r.spec.Fleet.Executors(), r.req.RunID, vs, warn) {
		// The low run's supervisors give it its own --grace to save its
		// work, which only they know: this run waits for its GPUs as
		// long, and says why it waits.
		fmt.Fprintf(notes, "tfhive: preempting run %s of %s (--priority low) on %s for its %s; waiting while it saves its work (its --grace)\n", v.RunID, v.User, strings.Join(v.Hosts, ", "), wording.Count(v.GPUs, "GPU"))
	}
}

// endingPlanner is mk for a run that waits: before each plan it notes
// the runs letting go of their GPUs (noteEnding), which the plan keeps in
// mind for the runs ahead (schedule.Request.Ending).
func (r *run) endingPlanner(mk Planner) Planner {
	return func(inv inventory.Inventory, req schedule.Request) (*schedule.Plan, error) {
		if r.queued() {
			r.noteEnding(inv)
			req.Ending, req.Settling = r.ending, r.settling
		}
		return mk(inv, req)
	}
}

// noteEnding compares each host's GPU claims, by run, with the last
// probe's: a run holding fewer on a host that answered both times has
// begun to end. Once ending, a run stays so for this wait: a run of which
// one task ended early only keeps the runs behind off GPUs that a run
// ahead would take once the rest end, never from a start of its own.
//
// A GPU claimed with no run's label, that was not so at the last probe,
// is settling (schedule.Request.Settling): its lock is being taken or
// let go of, which a loaded host takes seconds over.
func (r *run) noteEnding(inv inventory.Inventory) {
	now := map[string]map[string]int{}
	unlabelled := map[string][]int{}
	r.settling = nil
	for _, h := range inv.Hosts {
		if h.Err != nil {
			continue
		}
		n := map[string]int{}
		for _, c := range h.Claims {
			if c.Kind != "gpu" || c.Blocked != "" {
				continue
			}
			switch {
			case c.RunID == "":
				unlabelled[h.Name] = append(unlabelled[h.Name], c.ID)
				if _, seen := r.unlabelled[h.Name]; seen && !slices.Contains(r.unlabelled[h.Name], c.ID) {
					if r.settling == nil {
						r.settling = map[string][]int{}
					}
					r.settling[h.Name] = append(r.settling[h.Name], c.ID)
				}
			case c.RunID != r.req.RunID:
				n[schedule.EndingKey(c.User, c.RunID)]++
			}
		}
		if unlabelled[h.Name] == nil {
			// Probed, with no unlabelled claim: seen, for the next probe.
			unlabelled[h.Name] = []int{}
		}
		now[h.Name] = n
		for k, was := range r.held[h.Name] {
			if n[k] < was {
				if r.ending == nil {
					r.ending = map[string]bool{}
				}
				r.ending[k] = true
			}
		}
	}
	r.held, r.unlabelled = now, unlabelled
}

// execList is the fleet's open connections, in no order.
func execList(f Fleet) []remote.Executor {
	var execs []remote.Executor
	for _, e := range f.Executors() {
		execs = append(execs, e)
	}
	return execs
}
