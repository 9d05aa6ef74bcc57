package sweep

import (
	"maps"
	"slices"
	"sync"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Book keeps a sweep's trials apart: the GPUs each trial has planned and
// not yet given back, by host. Each trial plans on its own probe; trials
// started together would all see the same GPUs free and pick the same
// first one, one winning the claim and the others retrying after a pause
// to collide again. A trial plans instead with the book locked, on its
// probe as the book shows it (Seen: its siblings' places held), and its
// own GPUs enter the book before it claims them. It holds them until Drop
// (its attempt ended: its tasks ended, or its start failed).
//
// The book only keeps siblings apart: a colleague's run and its place in
// the hosts' queue are what the probe shows, as for any run.
type Book struct {
	mu   sync.Mutex
	held map[string]map[string][]int // trial id → host → GPU indexes
}

// NewBook is an empty book.
func NewBook() *Book { return &Book{held: map[string]map[string][]int{}} }

// Place plans trial id with the book locked: plan gets inv as the book
// shows it to that trial (Seen) and returns the GPUs its plan takes, by
// host, which are the trial's until Drop. The trial's earlier places go
// first: a trial holds one plan at a time. A plan that fails holds
// nothing.
func (b *Book) Place(id string, inv inventory.Inventory, plan func(inventory.Inventory) (map[string][]int, error)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
	gpus, err := plan(Seen(inv, b.held, id))
	if err != nil {
		return err
	}
	if len(gpus) > 0 {
		b.held[id] = gpus
	}
	return nil
}

// Drop gives back trial id's GPUs.
func (b *Book) Drop(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
}

// Seen is inv as trial id must plan on it, given held (trial → host →
// GPU indexes), the places of a sweep's trials: each GPU that another
// trial holds there is claimed by that trial, as its claim will be once
// it starts; and a trial that holds a place no longer waits in the hosts'
// queue (its tickets go once its claims are held), so its tickets are not
// ahead of anyone. A trial's GPUs held by the sweep's user count under a
// host policy's limits as its claims will. The GPUs free after that are the only ones id may
// take: trials waiting for GPUs that free up go for them only as many as
// fit, in the queue's order. inv is not changed.
func Seen(inv inventory.Inventory, held map[string]map[string][]int, id string) inventory.Inventory {
	out := inv
	out.Hosts = slices.Clone(inv.Hosts)
	for i := range out.Hosts {
		h := &out.Hosts[i]
		var claims []inventory.Claim
		for _, other := range slices.Sorted(maps.Keys(held)) {
			if other == id {
				continue
			}
			for _, g := range held[other][h.Name] {
				c := inventory.Claim{Kind: "gpu", ID: g, RunID: other, Task: "planned by this sweep"}
				if h.PolicyContext != nil {
					// The sweep's user, whose GPUs a policy's limits count.
					c.User = h.PolicyContext.User
				}
				for _, gpu := range h.GPUs {
					if gpu.Index == g {
						c.UUID = gpu.UUID
					}
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

// placed: run is a trial other than id that holds a place.
func placed(held map[string]map[string][]int, run, id string) bool {
	_, ok := held[run]
	return ok && run != id
}
