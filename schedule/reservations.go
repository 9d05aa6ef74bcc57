package schedule

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Reserved GPUs are free, but another user's reservation (tfhive reserve)
// holds them now, or will before this run would end.
const Reserved GPUState = "reserved"

// applyReservations takes out the free GPUs that another user's
// honoured reservation holds during this run: now (the host's probe
// time) until now + req.Timeout + req.Grace (a stop at the timeout
// gives the tasks the grace before they are killed), or for ever
// without a timeout. A run short enough to end before a reservation
// begins may use its GPUs. A host
// that could not say who we are on it (an older probe) keeps every
// reserved GPU from us: it fails closed.
func applyReservations(inv inventory.Inventory, st [][]GPUStatus, req *Request) {
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		if st[i] == nil {
			continue
		}
		now := h.Probed
		var end time.Time
		if req.Timeout > 0 {
			end = now.Add(req.Timeout + req.Grace)
		}
		for _, b := range h.Bookings {
			if !b.Honoured() || (h.Me != "" && b.User == h.Me) || !b.Overlaps(now, end) {
				continue
			}
			why := ReservedReason(b, now)
			for j := range st[i] {
				if st[i][j].State == Free && slices.Contains(b.GPUs, physicalIndex(h, j)) {
					st[i][j] = GPUStatus{Index: st[i][j].Index, State: Reserved, Reason: why}
				}
			}
		}
	}
}

// othersReserved is st, copied, with the free GPUs that a reservation
// of another user than user holds now taken out: what a waiting run of
// user's sees (user "": every reservation is another's).
func othersReserved(inv inventory.Inventory, st [][]GPUStatus, user string) [][]GPUStatus {
	out := make([][]GPUStatus, len(st))
	for i := range st {
		out[i] = slices.Clone(st[i])
	}
	as := inv
	as.Hosts = slices.Clone(inv.Hosts)
	for i := range as.Hosts {
		as.Hosts[i].Me = user
	}
	applyReservations(as, out, &Request{Timeout: time.Nanosecond})
	return out
}

// ReservedReason is what a run kept off b's GPUs at now is told: "reserved
// by alice until 18:00", or, for one ahead, when it begins and how a run
// may still use the GPUs before.
func ReservedReason(b inventory.Booking, now time.Time) string {
	if !now.Before(b.From) {
		return fmt.Sprintf("reserved by %s until %s", b.User, When(b.Until, now))
	}
	return fmt.Sprintf("reserved by %s from %s until %s; a run with a --timeout that ends before may use it",
		b.User, When(b.From, now), When(b.Until, now))
}

// When writes t in local time as a calendar says it beside now: 18:00
// today, "tomorrow 09:00", else "Mon 2 Jan 09:00"; seconds when it has
// any (a test's window).
func When(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	clock := "15:04"
	if t.Second() != 0 {
		clock = "15:04:05"
	}
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	switch {
	case ty == ny && tm == nm && td == nd:
		return t.Format(clock)
	case t.AddDate(0, 0, -1).Format(time.DateOnly) == now.Format(time.DateOnly):
		return "tomorrow " + t.Format(clock)
	}
	return t.Format("Mon 2 Jan " + clock)
}

// physicalIndex is the GPU a reservation names for host h's j-th GPU:
// its own index, a MIG instance's parent's.
func physicalIndex(h *inventory.HostInventory, j int) int {
	if j < len(h.GPUs) {
		if m := h.GPUs[j].MIGInstance; m != nil {
			return m.Parent
		}
		return h.GPUs[j].Index
	}
	return -1
}

// mineNow are the GPUs of host h (by index in its list) that a
// reservation of ours holds at its probe: a run of ours goes there first.
func mineNow(h *inventory.HostInventory) map[int]bool {
	if h.Me == "" {
		return nil
	}
	var mine map[int]bool
	for _, b := range h.Bookings {
		if b.User != h.Me || !b.Holds(h.Probed) {
			continue
		}
		for j := range h.GPUs {
			if slices.Contains(b.GPUs, physicalIndex(h, j)) {
				if mine == nil {
					mine = map[int]bool{}
				}
				mine[h.GPUs[j].Index] = true
			}
		}
	}
	return mine
}

// PlanReservation is a reservation a plan's tasks are inside.
type PlanReservation struct {
	Host  string    `json:"host"`
	ID    string    `json:"id"`
	User  string    `json:"user"`
	GPUs  []int     `json:"gpus"`
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
	Note  string    `json:"note,omitempty"`
}

// planReservations are the honoured reservations of ours that hold, at
// the plan's probe, GPUs its tasks were given: a run's report names them.
func planReservations(inv inventory.Inventory, p *Plan) []PlanReservation {
	var out []PlanReservation
	for _, h := range inv.Hosts {
		for _, b := range h.Bookings {
			if h.Me == "" || b.User != h.Me || !b.Holds(h.Probed) {
				continue
			}
			for _, t := range p.Tasks {
				hh := h
				if t.Host == h.Name && slices.ContainsFunc(t.GPUs, func(g int) bool {
					j := slices.IndexFunc(hh.GPUs, func(x inventory.GPU) bool { return x.Index == g })
					return j >= 0 && slices.Contains(b.GPUs, physicalIndex(&hh, j))
				}) {
					out = append(out, PlanReservation{Host: h.Name, ID: b.ID, User: b.User, GPUs: b.GPUs, From: b.From, Until: b.Until, Note: b.Note})
					break
				}
			}
		}
	}
	return out
}
