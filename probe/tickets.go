package probe

import (
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
)

// TicketMarker is the word before a ticket holder's label (launcher/hostops'
// scripts/ticket.sh): "tfhive-ticket DIR NAME RUN PRIORITY SINCE SHAPE".
const TicketMarker = "tfhive-ticket"

// parseTickets finds the waiting runs' tickets among the lock holders:
// a flock process holding a lock (it is in /proc/locks) whose command
// line ends with a ticket label for this host's claims dir. A ticket
// waits since its holder started, as the kernel dates it (its age, now
// being when the probe answered), whatever its label says: the label is
// anyone's to write, and one saying 1970 went ahead of every waiter.
//
// A ticket whose user also holds its state's lock (TicketStateMarker)
// is parked, its run running: no waiter, whose holder lives on so that
// the run, requeued, waits again at its first place (scripts/ticket.sh).
// A state holder is its user's word about her own ticket only: it can
// take that ticket out of the queue or say how often its run was
// requeued, never date it.
func parseTickets(s claimsSection, now time.Time) []inventory.Ticket {
	holders := s.holderMap()
	var out []inventory.Ticket
	seen := map[int]bool{}
	states := map[string]string{} // by user and ticket name
	for line := range strings.Lines(string(s.locks)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		h, ok := holders[pid]
		if err != nil || !ok || seen[pid] {
			continue
		}
		seen[pid] = true
		if name, state, ok := parseTicketState(h.args, s.dir); ok {
			k := h.user + "\x00" + name
			if states[k] != TicketParked {
				states[k] = state
			}
			continue
		}
		if t, ok := ParseTicketLabel(h.args, s.dir); ok {
			t.User, t.PID = h.user, pid
			t.Since = now.Add(-h.age).Truncate(time.Millisecond).UTC()
			out = append(out, t)
		}
	}
	kept := out[:0]
	for _, t := range out {
		switch st := states[t.User+"\x00"+t.Name]; {
		case st == TicketParked:
			continue
		case strings.HasPrefix(st, "requeued="):
			t.Requeued = max(t.Requeued, claim.RequeuedCount(claim.RequeuedWord+strings.TrimPrefix(st, "requeued=")))
		}
		kept = append(kept, t)
	}
	return kept
}

// TicketStateMarker is the word before a ticket's state holder's label
// (scripts/ticket.sh): "tfhive-ticket-state DIR NAME STATE", STATE
// TicketParked or requeued=N.
const TicketStateMarker = "tfhive-ticket-state"

// TicketParked is the state of a ticket whose run runs.
const TicketParked = "parked"

// parseTicketState reads a ticket's state holder's command line.
func parseTicketState(args, dir string) (name, state string, ok bool) {
	f := strings.Fields(args)
	n := len(f)
	if n < 5 || f[n-4] != TicketStateMarker || !strings.HasSuffix(f[0], "flock") || f[n-3] != dir {
		return "", "", false
	}
	name, state = f[n-2], f[n-1]
	if state != TicketParked && !strings.HasPrefix(state, "requeued=") {
		return "", "", false
	}
	return name, state, true
}

// ParseTicketLabel reads a ticket holder's command line. Its Since is
// the label's, which only names the ticket's file: parseTickets dates a
// ticket by its holder.
func ParseTicketLabel(args, dir string) (inventory.Ticket, bool) {
	f := strings.Fields(args)
	n := len(f)
	if n < 8 || f[n-7] != TicketMarker || !strings.HasSuffix(f[0], "flock") || f[n-6] != dir {
		return inventory.Ticket{}, false
	}
	name, run, prio, since, shape := f[n-5], f[n-4], f[n-3], f[n-2], f[n-1]
	ms, err := strconv.ParseInt(since, 10, 64)
	rank := map[string]int{"high": 0, "normal": 1, "low": 2}
	r, ok := rank[prio]
	if err != nil || !ok || !claim.ValidRunID(run) || name != TicketName(r, ms, run) {
		return inventory.Ticket{}, false
	}
	t := inventory.Ticket{Name: name, RunID: run, Priority: prio, Rank: r, Since: time.UnixMilli(ms).UTC()}
	// Just before the label, ticket.sh's inner script ends with its
	// requeue count; an older tfhive's ticket has none (0).
	if n >= 9 {
		t.Requeued = claim.RequeuedCount(f[n-8])
	}
	for _, g := range strings.Split(shape, ",") {
		x, err := strconv.Atoi(g)
		if err != nil || x < 0 || len(t.Shape) >= 1024 {
			return inventory.Ticket{}, false
		}
		t.Shape = append(t.Shape, x)
	}
	return t, true
}

// TicketName is a ticket's name: its order, then its run.
func TicketName(rank int, sinceMS int64, run string) string {
	return strconv.Itoa(rank) + "." + strconv.FormatInt(sinceMS, 10) + "." + run
}
