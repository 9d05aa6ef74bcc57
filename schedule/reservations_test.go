package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// t0 is the probe's time in the reservation tests.
var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// booked gives the host a reservation of user's, of gpus, from t0+from for d,
// the host probed at t0 as me.
func booked(me, user string, from, d time.Duration, gpus ...int) hostOpt {
	return func(h *inventory.HostInventory) {
		h.Me, h.Probed = me, t0
		h.Bookings = append(h.Bookings, inventory.Booking{ID: "0000000a", User: user, GPUs: gpus, From: t0.Add(from), Until: t0.Add(from + d)})
	}
}

func TestReservationsKeepOthersOff(t *testing.T) {
	for _, c := range []struct {
		name    string
		host    inventory.HostInventory
		timeout time.Duration
		want    string // layout, or "error: SUBSTRING"
	}{
		{"another's reservation now keeps bob off its GPUs",
			host("g1", 2, booked("bob", "alice", -time.Minute, time.Hour, 0)), 0, "worker:0@g1[1]:2222"},
		{"all reserved: refused naming who and until when",
			host("g1", 1, booked("bob", "alice", -time.Minute, time.Hour, 0)), 0, "error: reserved by alice until"},
		{"one ahead keeps off a run without --timeout",
			host("g1", 1, booked("bob", "alice", time.Hour, time.Hour, 0)), 0, "error: --timeout that ends before"},
		{"one ahead lets in a run that ends before it",
			host("g1", 1, booked("bob", "alice", time.Hour, time.Hour, 0)), 30 * time.Minute, "worker:0@g1[0]:2222"},
		{"a --timeout that ends inside it does not",
			host("g1", 1, booked("bob", "alice", time.Hour, time.Hour, 0)), 90 * time.Minute, "error: reserved by alice"},
		{"an ended one counts for nothing",
			host("g1", 1, booked("bob", "alice", -2*time.Hour, time.Hour, 0)), 0, "worker:0@g1[0]:2222"},
		{"the reserver's run lands on it first",
			host("g1", 4, booked("alice", "alice", -time.Minute, time.Hour, 2)), 0, "worker:0@g1[2]:2222"},
		{"a host that does not say who we are keeps every reservation from us",
			host("g1", 1, booked("", "alice", -time.Minute, time.Hour, 0)), 0, "error: reserved by alice"},
		{"an ignored file grants nothing",
			host("g1", 1, booked("bob", "alice", -time.Minute, time.Hour, 0), func(h *inventory.HostInventory) { h.Bookings[0].Ignored = "forged" }),
			0, "worker:0@g1[0]:2222"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Make(inventory.Inventory{Hosts: []inventory.HostInventory{c.host}}, req(func(r *Request) { r.Timeout = c.timeout }))
			if want, ok := strings.CutPrefix(c.want, "error: "); ok {
				var ce *CapacityError
				if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Lines, "\n"), want) {
					t.Fatalf("got %v, %v; want a capacity error whose lines say %q", p, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := layout(p); got != c.want {
				t.Errorf("layout %s, want %s", got, c.want)
			}
		})
	}
}

// The reserver's hosts go first: on two hosts with spread, the first task
// goes where its reservation is.
func TestReservationsHostFirst(t *testing.T) {
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{host("g1", 1), host("g2", 1, booked("alice", "alice", 0, time.Hour, 0))}}
	inv.Hosts[0].Me, inv.Hosts[0].Probed = "alice", t0
	p, err := Make(inv, req(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := layout(p); got != "worker:0@g2[0]:2222" {
		t.Errorf("layout %s, want the reserved host g2", got)
	}
	if used := p.Reservations; len(used) != 1 || used[0].ID != "0000000a" || used[0].Host != "g2" {
		t.Errorf("the plan's reservations %+v, want the one on g2", used)
	}
}

func TestWhen(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.Local)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(6 * time.Hour), "18:00"},
		{now.Add(4 * time.Second), "12:00:04"},
		{now.Add(21 * time.Hour), "tomorrow 09:00"},
		{now.Add(48 * time.Hour), "Fri 4 Dec 12:00"},
	} {
		if got := When(c.t, now); got != c.want {
			t.Errorf("When(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

// The queue's why is each waiter's own: a GPU alice reserved is free for
// her waiting run, not for bob's, whoever looks.
func TestQueueWhyReservations(t *testing.T) {
	for _, viewer := range []string{"alice", "bob", "carol"} {
		h := host("g1", 1, booked(viewer, "alice", -time.Minute, time.Hour, 0))
		h.Tickets = []inventory.Ticket{ticket("b", "bob", PriorityNormal, t0.Add(-2*time.Second), 1), ticket("a", "alice", PriorityNormal, t0.Add(-time.Second), 1)}
		q := QueueWhy(inventory.Inventory{Hosts: []inventory.HostInventory{h}})
		if len(q) != 2 || q[0].User != "bob" || !strings.Contains(q[0].Why, "0 free") || q[1].User != "alice" || !strings.HasPrefix(q[1].Why, "GPUs free now") {
			t.Errorf("as %s: %+v", viewer, q)
		}
	}
}

// A run stopped at its --timeout holds its GPUs for its --grace on: it
// may use GPUs reserved later only when timeout and grace end before.
func TestReservationsCountTheGrace(t *testing.T) {
	h := host("g1", 1, booked("bob", "alice", time.Hour, time.Hour, 0))
	for _, c := range []struct {
		timeout, grace time.Duration
		ok             bool
	}{
		{50 * time.Minute, 0, true},
		{50 * time.Minute, 10 * time.Minute, true},
		{50 * time.Minute, 20 * time.Minute, false},
		{59 * time.Minute, 30 * time.Minute, false},
	} {
		p, err := Make(inventory.Inventory{Hosts: []inventory.HostInventory{h}}, req(func(r *Request) { r.Timeout, r.Grace = c.timeout, c.grace }))
		var ce *CapacityError
		switch {
		case c.ok && (err != nil || layout(p) != "worker:0@g1[0]:2222"):
			t.Errorf("--timeout %s --grace %s, a reservation in 1h: %v, %v; want GPU 0", c.timeout, c.grace, p, err)
		case !c.ok && (!errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Lines, "\n"), "reserved by alice from ")):
			t.Errorf("--timeout %s --grace %s, a reservation in 1h: %v, %v; want it refused, reserved by alice", c.timeout, c.grace, p, err)
		}
	}
}
