package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
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
	remove, others := unreserveFiles(inv, o.ID)
	var failed []string
	for _, i := range slices.Sorted(maps.Keys(remove)) {
		h := &inv.Hosts[i]
		if err := hostops.Reserve(ctx, fleet.Executor(i), "", remove[i]); err != nil {
			failed = append(failed, h.Name+": "+err.Error())
			continue
		}
		fmt.Fprintf(o.Stdout, "tfhive: removed reservation %s on %s\n", o.ID, h.Name)
	}
	found := len(remove) > 0 || len(others) > 0
	switch {
	case len(remove) == 0 && len(others) > 0:
		// Only others' files have it: theirs to remove.
		return fmt.Errorf("could not remove reservation %s: %s: only they or root may remove it", o.ID, strings.Join(others, "; "))
	case len(others) > 0:
		// Another's file named with our id (anyone may name a file so)
		// is left alone and fails nothing of ours.
		for _, w := range others {
			fmt.Fprintf(o.Stderr, "tfhive: warning: %s too, left alone\n", w)
		}
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

// unreserveFiles are the files `unreserve id` removes, by host position:
// the user's own files of that id (anyone's as root), and a line for each
// file of that id of another user, whose it is ("h1: reservation id is
// bob's"): anyone may name a file with another's id, which makes it
// theirs, never the id's.
func unreserveFiles(inv inventory.Inventory, id string) (map[int][]string, []string) {
	remove := map[int][]string{}
	var others []string
	for i, h := range inv.Hosts {
		for _, b := range h.Bookings {
			switch {
			case b.ID != id:
			case b.User != h.Me && h.Me != "root":
				others = append(others, fmt.Sprintf("%s: reservation %s is %s's", h.Name, id, b.User))
			default:
				remove[i] = append(remove[i], b.File[strings.LastIndex(b.File, "/")+1:])
			}
		}
	}
	return remove, others
}
