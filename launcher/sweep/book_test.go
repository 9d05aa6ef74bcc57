package sweep

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// bookInv is two hosts of n free GPUs, as a probe sees them.
func bookInv(n int) inventory.Inventory {
	var inv inventory.Inventory
	for _, name := range []string{"w0", "w1"} {
		h := inventory.HostInventory{Name: name}
		for i := range n {
			h.GPUs = append(h.GPUs, inventory.GPU{Index: i, UUID: fmt.Sprintf("%s-uuid%d", name, i)})
		}
		inv.Hosts = append(inv.Hosts, h)
	}
	return inv
}

// firstFree is a one-GPU plan as the schedule makes it: the first GPU that
// no claim holds, host by host.
func firstFree(inv inventory.Inventory) (Places, error) {
	for _, h := range inv.Hosts {
	gpus:
		for _, g := range h.GPUs {
			for _, c := range h.Claims {
				if c.Kind == "gpu" && c.ID == g.Index {
					continue gpus
				}
			}
			return Places{h.Name: {{Kind: "gpu", ID: g.Index}}}, nil
		}
	}
	return nil, errors.New("not enough free GPUs")
}

// gpuAt is "host:index" of a one-GPU place.
func gpuAt(p Places) string {
	for h, cs := range p {
		return fmt.Sprintf("%s:%d", h, cs[0].ID)
	}
	return ""
}

// The case: trials that probed the same free fleet at once each
// get a GPU of their own, not all the first one.
func TestBookKeepsSiblingsApart(t *testing.T) {
	b := NewBook()
	inv := bookInv(2)
	var got []string
	for _, id := range []string{"s-001", "s-002", "s-003", "s-004"} {
		err := b.Place(id, inv, func(seen inventory.Inventory) (Places, error) {
			g, err := firstFree(seen)
			got = append(got, gpuAt(g))
			return g, err
		})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if want := []string{"w0:0", "w0:1", "w1:0", "w1:1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("placed %v, want %v", got, want)
	}
	if len(inv.Hosts[0].Claims) != 0 {
		t.Fatal("Place changed the probe's inventory")
	}
	// A fifth finds none until a trial gives its GPU back.
	if err := b.Place("s-005", inv, firstFree); err == nil {
		t.Fatal("a fifth trial placed on 4 GPUs held by its siblings")
	}
	b.Drop("s-002")
	var g Places
	if err := b.Place("s-005", inv, func(seen inventory.Inventory) (Places, error) {
		var err error
		g, err = firstFree(seen)
		return g, err
	}); err != nil || gpuAt(g) != "w0:1" {
		t.Fatalf("after s-002 ended: %v %v, want w0:1", g, err)
	}
}

// A trial that plans again (its claim lost, a relaunch) gives back its
// earlier place first; a failed plan holds nothing.
func TestBookPlaceAgainAndFailure(t *testing.T) {
	b := NewBook()
	inv := bookInv(1)
	b.Place("a", inv, func(inventory.Inventory) (Places, error) { return Places{"w0": {{Kind: "gpu", ID: 0}}}, nil })
	var seenA inventory.Inventory
	b.Place("a", inv, func(seen inventory.Inventory) (Places, error) {
		seenA = seen
		return nil, errors.New("claim lost")
	})
	if len(seenA.Hosts[0].Claims) != 0 {
		t.Fatalf("a trial sees its own place as a sibling's: %+v", seenA.Hosts[0].Claims)
	}
	g, err := firstFree(Seen(inv, b.held, nil, "b"))
	if err != nil || gpuAt(g) != "w0:0" {
		t.Fatalf("after a's failed plan b gets %v %v, want w0:0", g, err)
	}
}

// A sibling's places read as its claims, GPUs and ports (by the sweep's
// user, whom a policy's limits count), and a placed sibling's tickets are no longer
// ahead of anyone; other runs' tickets stay.
func TestSeenClaimsAndTickets(t *testing.T) {
	inv := bookInv(2)
	inv.Hosts[0].PolicyContext = &inventory.PolicyContext{User: "alice"}
	for i := range inv.Hosts {
		inv.Hosts[i].Tickets = []inventory.Ticket{{RunID: "s-001", User: "alice"}, {RunID: "colleague", User: "bob"}, {RunID: "s-002", User: "alice"}}
	}
	held := map[string]Places{
		"s-001": {"w0": {{Kind: "gpu", ID: 1, UUID: "w0-uuid1"}, {Kind: "port", ID: 2222}}},
		"s-003": {"w1": {{Kind: "gpu", ID: 0}}},
	}
	seen := Seen(inv, held, nil, "s-002")
	if want := []inventory.Claim{
		{Kind: "gpu", ID: 1, UUID: "w0-uuid1", RunID: "s-001", Task: "planned by this sweep", User: "alice"},
		{Kind: "port", ID: 2222, RunID: "s-001", Task: "planned by this sweep", User: "alice"},
	}; !reflect.DeepEqual(seen.Hosts[0].Claims, want) {
		t.Fatalf("w0's claims %+v, want %+v", seen.Hosts[0].Claims, want)
	}
	if c := seen.Hosts[1].Claims; len(c) != 1 || c[0].RunID != "s-003" || c[0].ID != 0 || c[0].User != "" {
		t.Fatalf("w1's claims %+v, want s-003's GPU 0", c)
	}
	for i, h := range seen.Hosts {
		var runs []string
		for _, tk := range h.Tickets {
			runs = append(runs, tk.RunID)
		}
		if want := []string{"colleague", "s-002"}; !slices.Equal(runs, want) {
			t.Fatalf("host %d's tickets %v, want %v (s-001 holds a place)", i, runs, want)
		}
		if len(inv.Hosts[i].Tickets) != 3 || len(inv.Hosts[i].Claims) != 0 {
			t.Fatal("Seen changed the probe's inventory")
		}
	}
	// A place its trial has claimed already shows once, as the probe saw it.
	inv.Hosts[1].Claims = []inventory.Claim{{Kind: "gpu", ID: 0, RunID: "s-003", User: "alice", PID: 42}}
	if c := Seen(inv, held, nil, "s-002").Hosts[1].Claims; len(c) != 1 || c[0].PID != 42 {
		t.Fatalf("w1's claims %+v, want s-003's own claim once", c)
	}
	inv.Hosts[1].Claims = nil
	// Trial s-001 itself still sees its own tickets and no claim of its own.
	own := Seen(inv, held, nil, "s-001")
	if len(own.Hosts[0].Claims) != 0 || len(own.Hosts[0].Tickets) != 3 {
		t.Fatalf("s-001 sees %+v / %+v", own.Hosts[0].Claims, own.Hosts[0].Tickets)
	}
}

// Trials placing at once (the sweep's goroutines) never share a GPU.
func TestBookConcurrent(t *testing.T) {
	b := NewBook()
	inv := bookInv(8)
	var mu sync.Mutex
	taken := map[string]string{}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			id := fmt.Sprintf("t%d", i)
			err := b.Place(id, inv, func(seen inventory.Inventory) (Places, error) {
				g, err := firstFree(seen)
				mu.Lock()
				defer mu.Unlock()
				k := gpuAt(g)
				if other, ok := taken[k]; ok {
					t.Errorf("%s and %s both on %s", other, id, k)
				}
				taken[k] = id
				return g, err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(taken) != 16 {
		t.Fatalf("%d GPUs placed, want 16", len(taken))
	}
}

// queuedInv is one host of n GPUs, those not in free claimed by an older
// run, where the sweep's trials s-001 (ahead) and s-002 wait with
// tickets, as the schedule reads them.
func queuedInv(n int, free ...int) inventory.Inventory {
	zero := 0
	h := inventory.HostInventory{Host: inventory.Host{Name: "w0", Address: "w0", ClusterAddress: "w0"}, Name: "w0", ClusterAddress: "w0", ListeningPorts: []int{22}}
	for i := range n {
		h.GPUs = append(h.GPUs, inventory.GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), MemoryUsedMiB: &zero, UtilizationPct: &zero, Processes: []inventory.Process{}})
		if !slices.Contains(free, i) {
			h.Claims = append(h.Claims, inventory.Claim{Kind: "gpu", ID: i, RunID: "older", User: "alice"})
		}
	}
	t0 := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	for k, run := range []string{"s-001", "s-002"} {
		h.Tickets = append(h.Tickets, inventory.Ticket{Name: run, RunID: run, User: "alice", Rank: schedule.PriorityRank(""), Since: t0.Add(time.Duration(k) * time.Second), Shape: []int{1}})
	}
	return inventory.Inventory{Hosts: []inventory.HostInventory{h}}
}

// trialPlan is schedule.Make's one-GPU plan of trial id, waiting as a
// sweep's trials wait, through the book.
func trialPlan(b *Book, inv inventory.Inventory, id string) (gpus []int, port int, err error) {
	req := schedule.NewRequest()
	req.Workers, req.GPUsPerWorker, req.RunID, req.Command = 1, 1, id, []string{"true"}
	req.QueueSince, req.NoBackfill = time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC), true
	err = b.Place(id, inv, func(seen inventory.Inventory) (Places, error) {
		p, err := schedule.Make(seen, req)
		if err != nil {
			return nil, err
		}
		places := Places{}
		for _, t := range p.Tasks {
			gpus = append(gpus, t.GPUs...)
			for _, g := range t.GPUs {
				places[t.Host] = append(places[t.Host], inventory.Claim{Kind: "gpu", ID: g})
			}
			places[t.Host] = append(places[t.Host], inventory.Claim{Kind: "port", ID: t.Port})
			port = t.Port
		}
		return places, nil
	})
	return gpus, port, err
}

// Trials waiting in the hosts' queue: when one GPU frees, only the trial
// first in the queue goes for it, whichever probes first; when two free,
// both start, on ports of their own, the one behind not held back by the
// tickets of the one ahead that has placed already.
func TestBookWaitingTrials(t *testing.T) {
	b := NewBook()
	one := queuedInv(4, 2)
	if g, _, err := trialPlan(b, one, "s-002"); !errors.As(err, new(*schedule.CapacityError)) {
		t.Fatalf("s-002 behind s-001 took %v (%v): the one GPU is s-001's", g, err)
	}
	if g, _, err := trialPlan(b, one, "s-001"); err != nil || !slices.Equal(g, []int{2}) {
		t.Fatalf("s-001: %v %v, want GPU 2", g, err)
	}
	if g, _, err := trialPlan(b, one, "s-002"); err == nil {
		t.Fatalf("s-002 took %v: s-001 planned the one free GPU", g)
	}
	b.Drop("s-001")
	b.Drop("s-002")

	two := queuedInv(4, 1, 3)
	g1, p1, err1 := trialPlan(b, two, "s-001")
	g2, p2, err2 := trialPlan(b, two, "s-002")
	if err1 != nil || err2 != nil || len(g1) != 1 || len(g2) != 1 || g1[0] == g2[0] {
		t.Fatalf("two GPUs free: s-001 %v %v, s-002 %v %v, want one each", g1, err1, g2, err2)
	}
	// Each task's port is the host's first free one: the siblings' differ.
	if p1 == 0 || p1 == p2 {
		t.Fatalf("ports %d and %d: siblings on one host on one port", p1, p2)
	}
}
