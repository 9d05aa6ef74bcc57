package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
)

// PsOptions are `tfhive ps`'s.
type PsOptions struct {
	Streams
	Hosts HostOptions
	JSON  bool
	// Watch, when not 0, lists the runs again at that interval, over the
	// same connections, until ctx ends (psWatch).
	Watch time.Duration
}

// Ps lists the runs holding claims on the hosts, with the state of the
// user's own kept runs.
func Ps(ctx context.Context, o PsOptions) error {
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	// In the same round trip: what the user's run directories say of the
	// runs holding claims (their state, whether a keeper follows them).
	fleet.LookForRuns()
	if o.Watch > 0 {
		return psWatch(ctx, o, fleet)
	}
	noteHostsFrom(o.Hosts, o.Stderr)
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	runs := hostops.Runs(inv)
	if o.JSON {
		err = view.WriteRunsJSON(o.Stdout, runs)
	} else {
		err = view.WriteRuns(o.Stdout, runs, time.Now())
		// Then the reservations honoured now or ahead: what keeps whom
		// off which GPUs (tfhive reservations lists ignored files too).
		var held []reservationRow
		for _, r := range reservationRows(inv) {
			if r.Ignored == "" {
				held = append(held, r)
			}
		}
		if err == nil && len(held) > 0 {
			fmt.Fprintln(o.Stdout)
			err = writeReservations(o.Stdout, held, time.Now())
		}
	}
	if err != nil {
		return err
	}
	return job.Unreachable(inv)
}
