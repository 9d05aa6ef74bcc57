package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	// Then the reservations honoured now or ahead: what keeps whom off
	// which GPUs (tfhive reservations lists ignored files too), in the
	// table and the document alike.
	var held []reservationRow
	for _, r := range reservationRows(inv) {
		if r.Ignored == "" {
			held = append(held, r)
		}
	}
	if o.JSON {
		err = writePsJSON(o.Stdout, runs, held)
	} else {
		err = view.WriteRuns(o.Stdout, runs, time.Now())
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

// writePsJSON is `ps --json`: {"runs": [...], "reservations": [...]},
// each run as view.WriteRunsJSON writes it, each reservation as
// `reservations --json` does; both lists always there, empty or not.
func writePsJSON(w io.Writer, runs []view.RunOnHost, held []reservationRow) error {
	if runs == nil {
		runs = []view.RunOnHost{}
	}
	if held == nil {
		held = []reservationRow{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Runs         []view.RunOnHost `json:"runs"`
		Reservations []reservationRow `json:"reservations"`
	}{runs, held})
}
