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
func parseTickets(s claimsSection, now time.Time) []inventory.Ticket {
	holders := s.holderMap()
	var out []inventory.Ticket
	seen := map[int]bool{}
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
		if t, ok := ParseTicketLabel(h.args, s.dir); ok {
			t.User, t.PID = h.user, pid
			t.Since = now.Add(-h.age).Truncate(time.Millisecond).UTC()
			out = append(out, t)
		}
	}
	return out
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
