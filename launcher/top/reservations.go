package top

import (
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// dayHours is the reach of the GPUs' timeline column: a day, an hour a
// cell.
const dayHours = 24

// anyReservation says whether some host has a reservation not ended: the
// timeline column is shown only then.
func anyReservation(snap *Snapshot) bool {
	for _, h := range snap.Inv.Hosts {
		for _, b := range h.Bookings {
			if b.Honoured() && b.Until.After(h.Probed) {
				return true
			}
		}
	}
	return false
}

// dayLine is GPU g's next 24 hours from the probe, an hour a cell: "."
// unreserved, "=" reserved by us, "#" by another user (tfhive
// reservations says who); the hour now is the first cell.
func dayLine(h *inventory.HostInventory, g inventory.GPU) string {
	phys := g.Index
	if g.MIGInstance != nil {
		phys = g.MIGInstance.Parent
	}
	start := h.Probed.Truncate(time.Hour)
	var b strings.Builder
	for i := range dayHours {
		from, until := start.Add(time.Duration(i)*time.Hour), start.Add(time.Duration(i+1)*time.Hour)
		if i == 0 {
			from = h.Probed
		}
		c := "."
		for _, r := range h.Bookings {
			if !r.Honoured() || !slices.Contains(r.GPUs, phys) || !r.Overlaps(from, until) {
				continue
			}
			if r.User == h.Me && h.Me != "" {
				if c == "." {
					c = "="
				}
			} else {
				c = "#"
			}
		}
		b.WriteString(c)
	}
	return b.String()
}
