package top

import (
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// The timeline: ours "=", another's "#" (winning an hour both touch),
// from the hour of the probe on.
func TestDayLine(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 30, 0, 0, time.UTC)
	h := inventory.HostInventory{Me: "alice", Probed: now, Bookings: []inventory.Booking{
		{User: "alice", GPUs: []int{0}, From: now, Until: now.Add(2 * time.Hour)},
		{User: "bob", GPUs: []int{0, 1}, From: now.Add(3 * time.Hour), Until: now.Add(4 * time.Hour)},
		{User: "carol", GPUs: []int{1}, From: now, Until: now.Add(time.Hour), Ignored: "forged"},
	}}
	for gpu, want := range map[int]string{0: "===##...................", 1: "...##..................."} {
		if got := dayLine(&h, inventory.GPU{Index: gpu}); got != want {
			t.Errorf("GPU %d: %q, want %q", gpu, got, want)
		}
	}
	if !anyReservation(&Snapshot{Inv: inventory.Inventory{Hosts: []inventory.HostInventory{h}}}) {
		t.Error("anyReservation: false")
	}
}
