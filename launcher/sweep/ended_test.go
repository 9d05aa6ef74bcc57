package sweep

import (
	"reflect"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// A probe made before trial s-001 ended still shows it: the view takes
// out its claims (the sweep's user's: a label naming it by another user
// is that user's claim), and on their GPUs its processes and their load;
// an intruder there stays. Its tickets stay. The probe is not changed.
func TestSeenForgetsEndedTrials(t *testing.T) {
	pct, mib := 93, 4000
	inv := bookInv(3)
	w0 := &inv.Hosts[0]
	w0.Me = "alice"
	w0.Claims = []inventory.Claim{
		{Kind: "gpu", ID: 0, RunID: "s-001", User: "alice", PID: 10},
		{Kind: "port", ID: 2222, RunID: "s-001", User: "alice", PID: 10},
		{Kind: "gpu", ID: 1, RunID: "s-001", User: "alice", PID: 11},
		{Kind: "gpu", ID: 2, RunID: "s-001", User: "mallory", PID: 12},
	}
	w0.GPUs[0].Processes = []inventory.Process{{PID: 20, User: "alice", Command: "python"}}
	w0.GPUs[0].UtilizationPct, w0.GPUs[0].MemoryUsedMiB = &pct, &mib
	w0.GPUs[1].Processes = []inventory.Process{{PID: 21, User: "alice"}, {PID: 22, User: "bob", Intruder: true}}
	w0.GPUs[2].Processes = []inventory.Process{{PID: 23, User: "mallory"}}
	w0.Tickets = []inventory.Ticket{{RunID: "s-001", User: "alice"}}
	before := cloneInv(inv)

	seen := Seen(inv, nil, map[string]bool{"s-001": true}, "s-002").Hosts[0]
	if want := []inventory.Claim{{Kind: "gpu", ID: 2, RunID: "s-001", User: "mallory", PID: 12}}; !reflect.DeepEqual(seen.Claims, want) {
		t.Errorf("claims %+v, want mallory's alone", seen.Claims)
	}
	if g := seen.GPUs[0]; len(g.Processes) != 0 || g.UtilizationPct != nil || g.MemoryUsedMiB != nil {
		t.Errorf("GPU 0: %+v, want the ended trial's process and load gone", g)
	}
	if g := seen.GPUs[1]; len(g.Processes) != 1 || !g.Processes[0].Intruder {
		t.Errorf("GPU 1's processes %+v, want bob's intruder alone", g.Processes)
	}
	if g := seen.GPUs[2]; len(g.Processes) != 1 {
		t.Errorf("GPU 2's processes %+v, want mallory's", g.Processes)
	}
	if len(seen.Tickets) != 1 {
		t.Errorf("tickets %+v, want the ended trial's kept", seen.Tickets)
	}
	if !reflect.DeepEqual(inv, before) {
		t.Error("Seen changed the probe's inventory")
	}
	// Not ended: the probe's claims, as they are.
	if c := Seen(inv, nil, nil, "s-002").Hosts[0].Claims; len(c) != 4 {
		t.Errorf("no trial ended: %d claims, want 4", len(c))
	}
}

// The GPU an ended trial freed goes to one sibling: once placed there,
// it is that sibling's for the others planning on the same old probe,
// as it is once the trial ended (End), not before. A trial planning
// again under an ended id is no longer ended.
func TestBookPlacesOnEndedTrialsGPU(t *testing.T) {
	inv := bookInv(1)
	inv.Hosts = inv.Hosts[:1]
	inv.Hosts[0].Me = "alice"
	inv.Hosts[0].Claims = []inventory.Claim{{Kind: "gpu", ID: 0, RunID: "s-001", User: "alice"}}
	b := NewBook()
	place := func(id string) string {
		var got Places
		err := b.Place(id, inv, func(seen inventory.Inventory) (Places, error) {
			p, err := firstFree(seen)
			got = p
			return p, err
		})
		if err != nil {
			return "none"
		}
		return gpuAt(got)
	}
	if g := place("s-002"); g != "none" {
		t.Fatalf("before s-001 ended: s-002 got %s, want none", g)
	}
	b.End("s-001")
	if g := place("s-002"); g != "w0:0" {
		t.Fatalf("after s-001 ended: s-002 got %s, want w0:0", g)
	}
	if g := place("s-003"); g != "none" {
		t.Fatalf("s-003 after s-002 was placed on s-001's GPU: got %s, want none", g)
	}
	b.Drop("s-002")
	// s-001 planning again is no longer ended: its claim in the old
	// probe is what the probe says, for the others to keep off.
	place("s-001")
	if g := place("s-003"); g != "none" {
		t.Fatalf("s-003 beside s-001 run again: got %s, want none", g)
	}
}

// cloneInv is a deep enough copy of inv to compare with after a view.
func cloneInv(inv inventory.Inventory) inventory.Inventory {
	out := inv
	out.Hosts = nil
	for _, h := range inv.Hosts {
		h.Claims = append([]inventory.Claim(nil), h.Claims...)
		h.Tickets = append([]inventory.Ticket(nil), h.Tickets...)
		gs := append([]inventory.GPU(nil), h.GPUs...)
		for i := range gs {
			gs[i].Processes = append([]inventory.Process(nil), gs[i].Processes...)
		}
		h.GPUs = gs
		out.Hosts = append(out.Hosts, h)
	}
	return out
}
