package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/schedule"
)

// QueueOptions are `tfhive queue`'s.
type QueueOptions struct {
	Streams
	Hosts HostOptions
	JSON  bool
	// Slurm is --on slurm's: the user's pending jobs there instead.
	Slurm SlurmOptions
}

// queueEntry is a row of `tfhive queue --json`.
type queueEntry struct {
	Position int `json:"position"`
	schedule.QueueEntry
	GPUs int `json:"gpus"`
}

// Queue lists the runs waiting for GPUs on the hosts, in the order every
// waiter computes, and why each cannot start yet.
func Queue(ctx context.Context, o QueueOptions) error {
	if o.Slurm.On != "" {
		return slurmQueue(ctx, o)
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	var rows []queueEntry
	for i, e := range schedule.QueueWhy(inv) {
		n := 0
		for _, g := range e.Shape {
			n += g
		}
		rows = append(rows, queueEntry{Position: i + 1, QueueEntry: e, GPUs: n})
	}
	if o.JSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []queueEntry{}
		}
		err = enc.Encode(map[string]any{"queue": rows})
	} else {
		var table [][]string
		for _, r := range rows {
			table = append(table, []string{strconv.Itoa(r.Position), r.RunID, r.User, r.Priority,
				fmt.Sprintf("%d (%s)", r.GPUs, schedule.ShapeString(r.Shape)), r.Since.Local().Format(time.DateTime), queueWhy(r.QueueEntry)})
		}
		err = view.WriteTable(o.Stdout, []string{"POS", "RUN", "USER", "PRIORITY", "GPUS", "WAITING SINCE", "WHY"}, table)
	}
	if err != nil {
		return err
	}
	return job.Unreachable(inv)
}

// queueWhy is a waiting run's WHY: a run requeued (preempted, or a task
// that asked with --requeue-on) says so first, with the start it waits
// for ("attempt 2": its first start was 1), as its ticket's label
// carries it; then why it cannot start yet.
func queueWhy(e schedule.QueueEntry) string {
	if e.Requeued <= 0 {
		return e.Why
	}
	why := fmt.Sprintf("requeued (attempt %d)", e.Requeued+1)
	if e.Why != "" {
		why += "; " + e.Why
	}
	return why
}
