package job

import (
	"context"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// claimAndStart is the attempt's last step: before the run's first
// claims, Hooks.Claim (the run lock, its record); then the engine claims
// and starts the plan's tasks over the probe's connections and follows
// them to the summary. The tickets are given up (or parked, for a run
// that may be requeued: parkTickets) once every task holds its claims: a
// claim lost to a run ahead (that took other GPUs than the queue kept for
// it) keeps this run's place while it plans again.
func (r *run) claimAndStart(ctx context.Context, plan *schedule.Plan, inv inventory.Inventory) (*record.Summary, error) {
	if !r.claimed && r.hooks.Claim != nil {
		if err := r.hooks.Claim(plan, inv, r.checked); err != nil {
			return nil, err
		}
	}
	r.claimed, r.started = true, true
	lo := r.lo
	lo.Started = func() {
		r.parkTickets(ctx)
		if r.hooks.Started != nil {
			r.hooks.Started()
		}
	}
	// Hosts without a task need no spare session.
	r.spec.Fleet.KeepSpares(plan.Hosts())
	lo.Plan, lo.Execs = plan, r.spec.Fleet.Executors()
	start := r.hooks.Start
	if start == nil {
		start = launcher.RunPlan
	}
	return start(ctx, lo)
}
