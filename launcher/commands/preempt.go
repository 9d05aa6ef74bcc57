package commands

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// preempt asks, for a waiting --priority high run, the fewest low runs
// whose GPUs would let it start to stop, on hosts whose policy allows it
// (schedule.Preemptions): their own supervisors stop them. A victim is
// asked once; its GPUs freed, the next attempt starts the run.
func preempt(ctx context.Context, fleet *probe.Fleet, tickets *hostops.Tickets, inv inventory.Inventory, req schedule.Request, stderr io.Writer) {
	vs := schedule.Preemptions(inv, req)
	if len(vs) == 0 {
		return
	}
	for _, v := range tickets.Preempt(ctx, executors(fleet), req.RunID, vs, func(s string) { fmt.Fprintf(stderr, "tfhive: warning: %s\n", s) }) {
		fmt.Fprintf(stderr, "tfhive: preempting run %s of %s (--priority low) on %s for its %s\n", v.RunID, v.User, strings.Join(v.Hosts, ", "), wording.Count(v.GPUs, "GPU"))
	}
}
