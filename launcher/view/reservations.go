package view

import (
	"slices"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// reservationNote says which reservations hold GPU g of host h or will
// (honoured, not ended at the probe): "reserved by alice until 18:00",
// "reserved by bob from tomorrow 09:00 until 12:00", joined by "; ". A
// MIG instance is its parent's.
func reservationNote(h *inventory.HostInventory, g inventory.GPU) string {
	phys := g.Index
	if g.MIGInstance != nil {
		phys = g.MIGInstance.Parent
	}
	var out []string
	for _, b := range h.Bookings {
		if !b.Honoured() || !b.Until.After(h.Probed) || !slices.Contains(b.GPUs, phys) {
			continue
		}
		s := "reserved by " + b.User + " until " + schedule.When(b.Until, h.Probed)
		if b.From.After(h.Probed) {
			s = "reserved by " + b.User + " from " + schedule.When(b.From, h.Probed) + " until " + schedule.When(b.Until, h.Probed)
		}
		out = append(out, SanitizeCells([]string{s})[0])
	}
	return strings.Join(out, "; ")
}

// withReservation adds g's reservations to its detail, once.
func withReservation(h *inventory.HostInventory, g inventory.GPU, detail string) string {
	note := reservationNote(h, g)
	switch {
	case note == "":
		return detail
	case detail == "":
		return note
	case strings.Contains(detail, note):
		return detail
	}
	return detail + "; " + note
}
