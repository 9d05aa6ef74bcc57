package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// ReservationsOptions are `tfhive reservations`'.
type ReservationsOptions struct {
	Streams
	Hosts HostOptions
	JSON  bool
}

// reservationRow is one reservation of `tfhive reservations --json`.
type reservationRow struct {
	Host string `json:"host"`
	inventory.Booking
	// State: "now" (in its window), "ahead", or "ignored" (Ignored says
	// why).
	State string `json:"state"`
}

// Reservations lists the reservations on the hosts that have not ended,
// those ignored too (a file that grants nothing, and whose it is).
func Reservations(ctx context.Context, o ReservationsOptions) error {
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	rows := reservationRows(inv)
	if o.JSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []reservationRow{}
		}
		err = enc.Encode(map[string]any{"reservations": rows})
	} else {
		err = writeReservations(o.Stdout, rows, time.Now())
	}
	if err != nil {
		return err
	}
	return job.Unreachable(inv)
}

// writeReservations is the reservations table, times as When writes
// them beside now.
func writeReservations(w io.Writer, rows []reservationRow, now time.Time) error {
	var table [][]string
	for _, r := range rows {
		state := r.State
		if r.Ignored != "" {
			state = "ignored: " + r.Ignored
		}
		from, until := "-", "-"
		if !r.Until.IsZero() {
			from, until = schedule.When(r.From, now), schedule.When(r.Until, now)
		}
		table = append(table, view.SanitizeCells([]string{r.Host, r.ID, r.User, view.IntList(r.GPUs), from, until, state, r.Note}))
	}
	return view.WriteTable(w, []string{"HOST", "ID", "USER", "GPUS", "FROM", "UNTIL", "STATE", "NOTE"}, table)
}

// reservationRows are the reservations of inv not ended at its probes,
// host by host in the order they were made.
func reservationRows(inv inventory.Inventory) []reservationRow {
	var rows []reservationRow
	for _, h := range inv.Hosts {
		for _, b := range h.Bookings {
			if b.Ignored == "" && !b.Until.After(h.Probed) {
				continue
			}
			r := reservationRow{Host: h.Name, Booking: b, State: "ahead"}
			switch {
			case b.Ignored != "":
				r.State = "ignored"
			case b.Holds(h.Probed):
				r.State = "now"
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// UnreserveOptions are `tfhive unreserve`'s.
type UnreserveOptions struct {
	Streams
	Hosts HostOptions
	ID    string
}

// Unreserve removes a reservation on every host where it is: only its
// owner's, or any as root (as `scontrol delete reservation` is an
// operator's, and a booking in TensorHive its owner's or an admin's).
func Unreserve(ctx context.Context, o UnreserveOptions) error {
	if !inventory.ValidBookingID(o.ID) {
		return &UsageError{Msg: fmt.Sprintf("%q is not a reservation id", o.ID), Fix: "tfhive reservations lists them: 8 hex digits"}
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	found, done := false, 0
	var failed []string
	for i, h := range inv.Hosts {
		var names []string
		for _, b := range h.Bookings {
			if b.ID != o.ID {
				continue
			}
			found = true
			if b.User != h.Me && h.Me != "root" {
				failed = append(failed, fmt.Sprintf("%s: reservation %s is %s's: only they or root may remove it", h.Name, o.ID, b.User))
				continue
			}
			names = append(names, b.File[strings.LastIndex(b.File, "/")+1:])
		}
		if len(names) == 0 {
			continue
		}
		if err := hostops.Reserve(ctx, fleet.Executor(i), "", names); err != nil {
			failed = append(failed, h.Name+": "+err.Error())
			continue
		}
		done++
		fmt.Fprintf(o.Stdout, "tfhive: removed reservation %s on %s\n", o.ID, h.Name)
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("could not remove reservation %s everywhere: %s", o.ID, strings.Join(failed, "; "))
	case !found:
		if err := job.Unreachable(inv); err != nil {
			return err
		}
		// A host whose files were not all listed may hold it unseen.
		var unknown []string
		for _, h := range inv.Hosts {
			if h.BookingsUnknown != "" {
				unknown = append(unknown, h.Name+": "+h.BookingsUnknown)
			}
		}
		if len(unknown) > 0 {
			return fmt.Errorf("no reservation %s among those listed on these hosts; %s", o.ID, strings.Join(unknown, "; "))
		}
		return fmt.Errorf("no reservation %s on these hosts", o.ID)
	}
	return job.Unreachable(inv)
}
