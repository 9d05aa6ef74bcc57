package job

import (
	"context"
	"errors"
	"fmt"
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
		r.tickets = hostops.HoldTickets(ctx, execList(r.spec.Fleet), r.req, r.wake)
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
		fmt.Fprintf(notes, "tfhive: preempting run %s of %s (--priority low) on %s for its %s\n", v.RunID, v.User, strings.Join(v.Hosts, ", "), wording.Count(v.GPUs, "GPU"))
	}
}

// execList is the fleet's open connections, in no order.
func execList(f Fleet) []remote.Executor {
	var execs []remote.Executor
	for _, e := range f.Executors() {
		execs = append(execs, e)
	}
	return execs
}
