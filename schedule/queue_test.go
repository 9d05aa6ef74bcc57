package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

func ticket(run, user, prio string, since time.Time, shape ...int) inventory.Ticket {
	return inventory.Ticket{Name: run, RunID: run, User: user, Priority: prio, Rank: PriorityRank(prio), Since: since, Shape: shape}
}

// A run that holds tickets has their place, as the hosts date them: a
// run whose ticket the host dates before this run's own waits ahead of
// it, although this run began to wait (QueueSince, its own clock) before
// either ticket was taken.
func TestQueueOwnPlaceIsItsTicket(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h := host("h1", 2)
	h.Tickets = []inventory.Ticket{
		ticket("other", "bob", PriorityNormal, t0.Add(time.Second), 2),
		ticket("me", "alice", PriorityNormal, t0.Add(2*time.Second), 2),
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{h}}
	req := NewRequest()
	req.Workers, req.GPUsPerWorker, req.RunID, req.Command = 1, 2, "me", []string{"true"}
	req.QueueSince = t0
	if _, err := Make(inv, req); !errors.As(err, new(*CapacityError)) {
		t.Fatalf("Make: %v, want the GPUs kept for run other", err)
	}
	// Without its tickets yet, it is where it began to wait: ahead.
	inv.Hosts[0].Tickets = inv.Hosts[0].Tickets[:1]
	if _, err := Make(inv, req); err != nil {
		t.Fatalf("Make without its ticket: %v", err)
	}
}

// A run waiting on two hosts waits since its first ticket, whichever
// host dates it.
func TestQueueSinceEarliestHost(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h1, h2 := host("h1", 1), host("h2", 1)
	h1.Tickets = []inventory.Ticket{ticket("a", "bob", PriorityNormal, t0.Add(3*time.Second), 1), ticket("b", "carol", PriorityNormal, t0.Add(2*time.Second), 1)}
	h2.Tickets = []inventory.Ticket{ticket("a", "bob", PriorityNormal, t0.Add(time.Second), 1)}
	q := Queue(inventory.Inventory{Hosts: []inventory.HostInventory{h1, h2}})
	if len(q) != 2 || q[0].RunID != "a" || !q[0].Since.Equal(t0.Add(time.Second)) || len(q[0].Hosts) != 2 || q[1].RunID != "b" {
		t.Fatalf("queue: %+v", q)
	}
}

// Ahead is the runs before this one, in order: a high run that came
// later is ahead; its own ticket gives its place once held.
func TestAhead(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h := host("h1", 2)
	h.Tickets = []inventory.Ticket{
		ticket("early", "bob", PriorityNormal, t0.Add(time.Second), 1),
		ticket("late", "carol", PriorityNormal, t0.Add(5*time.Second), 1),
		ticket("high", "dave", PriorityHigh, t0.Add(9*time.Second), 1),
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{h}}
	req := NewRequest()
	req.RunID = "me"
	if got := Ahead(inv, req); got != nil {
		t.Errorf("without QueueSince: %+v", got)
	}
	req.QueueSince = t0.Add(3 * time.Second)
	ids := func(q []QueueEntry) (s []string) {
		for _, e := range q {
			s = append(s, e.RunID)
		}
		return s
	}
	if got := ids(Ahead(inv, req)); !slices.Equal(got, []string{"high", "early"}) {
		t.Errorf("ahead: %v, want high early", got)
	}
	// Its ticket, dated by the host after late's, is its place.
	inv.Hosts[0].Tickets = append(inv.Hosts[0].Tickets, ticket("me", "alice", PriorityNormal, t0.Add(6*time.Second), 1))
	if got := ids(Ahead(inv, req)); !slices.Equal(got, []string{"high", "early", "late"}) {
		t.Errorf("ahead with its ticket: %v, want high early late", got)
	}
}

// A run behind one that waits for 2 GPUs of a host, one of them busy,
// backfills on the free one; a sweep's trial (NoBackfill) does not, and
// says for whom it is kept, but still starts on a host where the run
// ahead could never fit (one GPU).
func TestQueueNoBackfill(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h1 := host("h1", 2, proc(0, "carol", 42, "python train.py"))
	h1.Tickets = []inventory.Ticket{ticket("big", "bob", PriorityNormal, t0, 2)}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{h1}}
	req := NewRequest()
	req.Workers, req.GPUsPerWorker, req.RunID, req.Command = 1, 1, "sw-005", []string{"true"}
	req.QueueSince = t0.Add(time.Second)
	if _, err := Make(inv, req); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	req.NoBackfill = true
	_, err := Make(inv, req)
	var ce *CapacityError
	if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Lines, "\n"), "kept for run big (bob, normal, waiting since 03:04:05 UTC): a sweep's trial does not backfill") {
		t.Fatalf("NoBackfill: %v %+v", err, ce)
	}
	// A host of one GPU could never hold big's task of 2: not kept.
	h2 := host("h2", 1)
	h2.Tickets = []inventory.Ticket{ticket("big", "bob", PriorityNormal, t0, 2)}
	inv.Hosts = append(inv.Hosts, h2)
	p, err := Make(inv, req)
	if err != nil || p.Tasks[0].Host != "h2" {
		t.Fatalf("on h2: %v %+v", err, p)
	}
}

// A run behind one that waits for 4 GPUs over two hosts, when the run
// holding them has let go of one host's and not yet the other's: the
// free GPUs are kept for the run ahead once the holder is known to be
// ending (Request.Ending), else backfilled (issue 33: the run behind
// started first and the one ahead waited for it).
func TestQueueKeepsForRunAheadWhileOneEnds(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h1, h2 := host("h1", 2), host("h2", 2)
	h2.Claims = []inventory.Claim{
		{Kind: "gpu", ID: 0, RunID: "holder", Task: "worker:2", User: "carol", Since: t0},
		{Kind: "gpu", ID: 1, RunID: "holder", Task: "worker:3", User: "carol", Since: t0},
	}
	for _, h := range []*inventory.HostInventory{&h1, &h2} {
		h.Tickets = []inventory.Ticket{ticket("q1", "bob", PriorityNormal, t0, 1, 1, 1, 1)}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{h1, h2}}
	req := NewRequest()
	req.Workers, req.GPUsPerWorker, req.RunID, req.Command = 2, 1, "q2", []string{"true"}
	req.QueueSince = t0.Add(time.Second)
	if _, err := Make(inv, req); err != nil {
		t.Fatalf("backfill while holder is not known to end: %v", err)
	}
	req.Ending = map[string]bool{EndingKey("carol", "holder"): true}
	_, err := Make(inv, req)
	var ce *CapacityError
	if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Lines, "\n"), "kept for run q1 (bob, normal, waiting since 03:04:05 UTC): it fits once the runs letting go of their GPUs have") {
		t.Fatalf("with holder ending: %v %+v", err, ce)
	}
	// Another run's end keeps nothing.
	req.Ending = map[string]bool{EndingKey("carol", "other"): true}
	if _, err := Make(inv, req); err != nil {
		t.Fatalf("another run ending: %v", err)
	}
}

// A run ahead that has begun to claim (it keeps its tickets until every
// task holds its claims) fits on what it holds already: a run behind
// planning meanwhile keeps off the free GPUs it is about to take. Without
// that, q1's claims on h1 made it look too big for what was free, q2 took
// h2's GPUs, q1's claims there failed and it waited for q2 to end (issue
// 33, on loaded hosts, where a run's claims take seconds).
func TestQueueKeepsForRunAheadWhileItClaims(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h1, h2 := host("h1", 2), host("h2", 2)
	h1.Claims = []inventory.Claim{
		{Kind: "gpu", ID: 0, RunID: "q1", Task: "worker:0", User: "bob", Since: t0},
		{Kind: "gpu", ID: 1, RunID: "q1", Task: "worker:1", User: "bob", Since: t0},
	}
	for _, h := range []*inventory.HostInventory{&h1, &h2} {
		h.Tickets = []inventory.Ticket{ticket("q1", "bob", PriorityNormal, t0, 1, 1, 1, 1)}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{h1, h2}}
	req := NewRequest()
	req.Workers, req.GPUsPerWorker, req.RunID, req.Command = 2, 1, "q2", []string{"true"}
	req.QueueSince = t0.Add(time.Second)
	_, err := Make(inv, req)
	var ce *CapacityError
	if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Lines, "\n"), "kept for run q1 (bob, normal, waiting since 03:04:05 UTC)") {
		t.Fatalf("q2 while q1 claims: %v %+v", err, ce)
	}
	// Another user's run of that name holds nothing of q1's.
	for i := range h1.Claims {
		h1.Claims[i].User = "carol"
	}
	inv.Hosts[0] = h1
	if _, err := Make(inv, req); err != nil {
		t.Fatalf("with carol's q1 on h1: %v", err)
	}
}

// A GPU settling (claimed with no run's label since the last probe: a
// run's lock being let go of, or taken) counts as free for a run ahead:
// the run behind keeps off what that run would take (issue 33, loaded
// hosts: the holder's supervisor had dropped its label, not yet its lock).
func TestQueueKeepsForRunAheadWhileAClaimSettles(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h1, h2 := host("h1", 2), host("h2", 2)
	h2.Claims = []inventory.Claim{{Kind: "gpu", ID: 0, Since: t0}}
	for _, h := range []*inventory.HostInventory{&h1, &h2} {
		h.Tickets = []inventory.Ticket{ticket("q1", "bob", PriorityNormal, t0, 1, 1, 1, 1)}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{h1, h2}}
	req := NewRequest()
	req.Workers, req.GPUsPerWorker, req.RunID, req.Command = 2, 1, "q2", []string{"true"}
	req.QueueSince = t0.Add(time.Second)
	if _, err := Make(inv, req); err != nil {
		t.Fatalf("an unlabelled claim not known to settle: %v", err)
	}
	req.Settling = map[string][]int{"h2": {0}}
	_, err := Make(inv, req)
	var ce *CapacityError
	if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Lines, "\n"), "kept for run q1") {
		t.Fatalf("with h2's GPU 0 settling: %v %+v", err, ce)
	}
}
