// Package job is a run from request to summary, across attempts: it
// plans, waits its turn in the hosts' queue (tickets, wake, preempting low
// runs), sends the --sync tree to the planned hosts, checks them
// (--check), claims and starts through the engine (launcher.RunPlan), plans
// again after a claim lost to another run, and relaunches without a host
// that was lost, as launcher/lifecycle decides. `tfhive run`, each trial
// of a sweep and `tfhive rerun` all run through Run.
//
// It prints nothing of its own but the lines a run says as it goes (to
// Spec.Notes, Syncer's callbacks, and the engine's console); what is shown
// while it waits, and the summary, are its caller's. It reads no
// environment: its caller passes in what it needs.
package job

import (
	"context"
	"io"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// Spec is one run: what to run, where, and how long it may wait.
type Spec struct {
	// Request is the job, validated (schedule.Request.Validate); Run sets
	// its QueueSince, its place among waiting runs.
	Request schedule.Request
	// Fleet is the hosts, probed at each attempt.
	Fleet Fleet
	// Engine is the engine's options, the same for every attempt; Run
	// fills in each attempt's plan, connections, priority, --sync report,
	// Started and, after a lost host, Relaunch. Its Restart is the policy
	// that also decides relaunches, its Console says them.
	Engine launcher.Options
	// Wait is --wait: how long the run waits, queued, for GPUs; 0: not at
	// all, unless WaitForever.
	Wait time.Duration
	// WaitForever: the run waits, queued, until ctx ends (a sweep's trial
	// without --wait waits its turn until the sweep ends).
	WaitForever bool
	// Check, when not nil, is --check: the plan's hosts are checked before
	// any claim is taken, and the run refused (a *CheckError) when they
	// differ. Its Code is filled in from each plan.
	Check *doctor.Options
	// Sync sends the --sync tree to the planned hosts; nil: no --sync.
	Sync *Syncer
	// Requeue is when the run goes back to the queue once started
	// (--requeue, --requeue-on, --wait: requeue.go).
	Requeue lifecycle.Requeue
	// Notes is where the run says what it does while it may be waiting
	// (hosts not used, preemptions): the caller's wait line, which
	// erases itself first.
	Notes io.Writer
}

// Hooks are what the caller learns, and decides, as the run goes; each
// may be nil.
type Hooks struct {
	// Plan makes a plan from a probe: nil, schedule.Make; a sweep's trial
	// plans by the sweep's book, apart from its siblings.
	Plan Planner
	// AttemptDone is told that an attempt ended: started and ended, or
	// failed to start (a sweep's trial gives up its place in the book).
	AttemptDone func()
	// Waiting is told, before each pause between attempts, why the run
	// waits; Waited that the wait is over (a plan fits, or the run ends).
	Waiting func(Waiting)
	Waited  func()
	// Claim is called once, before the run's first claims are taken, with
	// the first plan that starts, its probe and --check's results: the
	// run lock, the record of how the run was started, which the caller
	// holds until it has said all (the summary) and then gives up. An
	// error ends the run.
	Claim func(plan *schedule.Plan, inv inventory.Inventory, checked map[string]doctor.Host) error
	// Started is told once every task of an attempt was told to go.
	Started func()
	// Start starts an attempt's tasks and follows them to their summary:
	// nil, launcher.RunPlan; the caller routes its signals there.
	Start func(context.Context, launcher.Options) (*record.Summary, error)
}

// Waiting is why a run waits before its next attempt.
type Waiting struct {
	Err error
	// Ahead are the runs waiting ahead of it, in the queue's order.
	Ahead []schedule.QueueEntry
	// Queued: it waits in the queue (--wait); Left is what is left of Wait
	// (0 for ever).
	Queued     bool
	Left, Wait time.Duration
}

// Run runs the job to its summary: it plans, queues, syncs, checks,
// claims and starts, attempt after attempt, as Retry decides, then
// relaunches after a lost host as the restart policy allows. The summary
// is nil when nothing started; the error is the last attempt's.
func Run(ctx context.Context, s Spec, h Hooks) (*record.Summary, error) {
	r := newRun(s, h)
	defer r.close()
	// Retry after a claim lost to another run, and under --wait after too
	// few GPUs (retry.go).
	retry := r.retry()
	sum, err := retry.Do(ctx, r.attempt)
	r.waited()
	for err == nil {
		// Relaunch after a lost host (relaunch.go).
		sum = r.relaunch(ctx, sum, retry)
		// Back to the queue after a preemption, or a task's ask
		// (requeue.go).
		var again bool
		if sum, again, err = r.requeue(ctx, sum); !again {
			break
		}
	}
	return sum, err
}

// attempt is one try at starting the run: plan; queue, when it does not
// fit; sync; check; claim and start.
func (r *run) attempt(ctx context.Context) (*record.Summary, error) {
	if r.hooks.AttemptDone != nil {
		defer r.hooks.AttemptDone()
	}
	plan, inv, err := r.plan(ctx) // plan.go
	if err != nil {
		r.queue(ctx, inv, err) // queue.go: tickets, wake, preempt
		return nil, err
	}
	if err := r.sync(ctx, plan); err != nil { // sync.go
		return nil, err
	}
	if err := r.checkHosts(ctx, inv, plan); err != nil { // check.go
		return nil, err
	}
	return r.claimAndStart(ctx, plan, inv) // claim.go
}
