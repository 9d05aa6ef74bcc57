package sweep

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// seenReference is Seen as first written, host by host over every trial:
// what Seen must still say.
func seenReference(inv inventory.Inventory, held map[string]Places, id string) inventory.Inventory {
	out := inv
	out.Hosts = slices.Clone(inv.Hosts)
	for i := range out.Hosts {
		h := &out.Hosts[i]
		var claims []inventory.Claim
		for _, other := range slices.Sorted(maps.Keys(held)) {
			if other == id {
				continue
			}
			for _, p := range held[other][h.Name] {
				if slices.ContainsFunc(h.Claims, func(c inventory.Claim) bool { return c.Kind == p.Kind && c.ID == p.ID }) {
					continue
				}
				c := inventory.Claim{Kind: p.Kind, ID: p.ID, UUID: p.UUID, RunID: other, Task: "planned by this sweep"}
				if h.PolicyContext != nil {
					c.User = h.PolicyContext.User
				}
				claims = append(claims, c)
			}
		}
		if len(claims) > 0 {
			h.Claims = append(slices.Clone(h.Claims), claims...)
		}
		if slices.ContainsFunc(h.Tickets, func(t inventory.Ticket) bool { return placed(held, t.RunID, id) }) {
			h.Tickets = slices.DeleteFunc(slices.Clone(h.Tickets), func(t inventory.Ticket) bool { return placed(held, t.RunID, id) })
		}
	}
	return out
}

// randomBook is a probe and a book drawn from seed: hosts whose names
// may repeat, claims and places that overlap (ids from a small range,
// a place listed twice, places on hosts the probe lacks), tickets of
// trials and of other runs, policies on some hosts; and the trial that
// plans, held or not.
func randomBook(seed uint64) (inventory.Inventory, map[string]Places, string) {
	r := rand.New(rand.NewPCG(seed, 1))
	kind := func() string { return []string{"gpu", "port"}[r.IntN(2)] }
	hostName := func() string { return fmt.Sprintf("h%d", r.IntN(10)) }
	trial := func() string { return fmt.Sprintf("t%03d", r.IntN(90)) }
	var inv inventory.Inventory
	for range r.IntN(12) {
		h := inventory.HostInventory{Name: hostName()}
		for range r.IntN(20) {
			h.Claims = append(h.Claims, inventory.Claim{Kind: kind(), ID: r.IntN(12), RunID: trial(), PID: r.IntN(1000)})
		}
		if r.IntN(3) == 0 {
			h.Claims = []inventory.Claim{}
		}
		for range r.IntN(6) {
			run := trial()
			if r.IntN(3) == 0 {
				run = "colleague"
			}
			h.Tickets = append(h.Tickets, inventory.Ticket{RunID: run, User: "alice"})
		}
		if r.IntN(2) == 0 {
			h.PolicyContext = &inventory.PolicyContext{User: "alice"}
		}
		inv.Hosts = append(inv.Hosts, h)
	}
	held := map[string]Places{}
	for range r.IntN(80) {
		p := Places{}
		for range 1 + r.IntN(3) {
			name := hostName()
			for range 1 + r.IntN(4) {
				p[name] = append(p[name], inventory.Claim{Kind: kind(), ID: r.IntN(12), UUID: fmt.Sprintf("GPU-%d", r.IntN(12))})
			}
		}
		held[trial()] = p
	}
	return inv, held, trial()
}

// Seen, indexed by host once, says what the reference says, on many
// drawn books, and leaves the probe as it was.
func TestSeenAsReference(t *testing.T) {
	for seed := range uint64(1000) {
		inv, held, id := randomBook(seed)
		want := seenReference(inv, held, id)
		if got := Seen(inv, held, nil, id); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: Seen\n%+v\nwant\n%+v", seed, got, want)
		}
		if pristine, _, _ := randomBook(seed); !reflect.DeepEqual(inv, pristine) {
			t.Fatalf("seed %d: Seen changed the probe", seed)
		}
	}
}
