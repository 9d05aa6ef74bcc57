package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/probe/inventory"
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
	r.joinParking()
	switch {
	case r.tickets == nil:
		r.tickets = hostops.HoldTickets(ctx, r.spec.Fleet.Executors(), r.req, r.requeues(), r.wake, false)
	case r.tickets.Parked():
		// Requeued: back in the queue at its first place, its holders
		// there since (parkTickets).
		r.tickets.Resume(ctx, r.spec.Fleet.Executors(), r.req, r.requeues(), r.wake)
	}
	r.preempt(ctx, inv)
}

// requeues is how often the run went back to the queue.
func (r *run) requeues() int {
	if r.lo.Relaunch != nil {
		return r.lo.Relaunch.Requeues
	}
	return 0
}

// parkTickets is what a run's tickets become once it started: a run
// that may be requeued parks them (hostops.Tickets.Park), so that, back
// in the queue, it waits at its first place, which its tickets' holders
// keep, as the hosts' kernels dated them; one that started without
// waiting holds them parked now (in the background: the run goes on),
// its place when it started. Any other run gives them up.
func (r *run) parkTickets(ctx context.Context) {
	switch {
	case !r.mayRequeue():
		r.tickets.Release()
	case r.tickets != nil:
		r.tickets.Park()
	case r.parking == nil:
		done := make(chan struct{})
		r.parking = done
		execs, req, requeued, wake := r.spec.Fleet.Executors(), r.req, r.requeues(), r.wake
		go func() {
			defer close(done)
			r.parked = hostops.HoldTickets(ctx, execs, req, requeued, wake, true)
		}()
	}
}

// mayRequeue: the run may go back to the queue once started: a task may
// ask for it (--requeue-on), or it is a low run, which a high one may
// preempt (normal and high runs never are), requeued then.
func (r *run) mayRequeue() bool {
	return len(r.spec.Requeue.On) > 0 || r.spec.Requeue.Preempted && r.req.Priority == schedule.PriorityLow
}

// joinParking waits for the tickets parkTickets holds in the background:
// they are the run's from then on.
func (r *run) joinParking() {
	if r.parking == nil {
		return
	}
	<-r.parking
	r.parking = nil
	if r.tickets == nil {
		r.tickets = r.parked
	} else {
		r.parked.Release()
	}
	r.parked = nil
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
