package sweep

import (
	"maps"
	"slices"
	"sync"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Book keeps a sweep's trials apart: the GPUs and ports each trial has
// planned and not yet given back, by host, as the claims its tasks will
// take. Each trial plans on its own probe; trials
// started together would all see the same GPUs free and pick the same
// first one, one winning the claim and the others retrying after a pause
// to collide again (on ports too: each picks the host's first free one).
// A trial plans instead with the book locked, on its probe as the book
// shows it (Seen: its siblings' places held), and its own claims enter
// the book before it takes them. It holds them until Drop
// (its attempt ended: its tasks ended, or its start failed).
//
// The book only keeps siblings apart: a colleague's run and its place in
// the hosts' queue are what the probe shows, as for any run.
type Book struct {
	mu   sync.Mutex
	held map[string]Places // by trial id
}

// Places are a trial's claims to be, by host: kind and id (a GPU's index,
// a port) are what count.
type Places map[string][]inventory.Claim

// NewBook is an empty book.
func NewBook() *Book { return &Book{held: map[string]Places{}} }

// Place plans trial id with the book locked: plan gets inv as the book
// shows it to that trial (Seen) and returns the claims its plan will
// take, by host, which are the trial's until Drop. The trial's earlier places go
// first: a trial holds one plan at a time. A plan that fails holds
// nothing.
func (b *Book) Place(id string, inv inventory.Inventory, plan func(inventory.Inventory) (Places, error)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
	places, err := plan(Seen(inv, b.held, id))
	if err != nil {
		return err
	}
	if len(places) > 0 {
		b.held[id] = places
	}
	return nil
}

// Drop gives back trial id's places.
func (b *Book) Drop(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
}

// Seen is inv as trial id must plan on it, given held, the places of a
// sweep's trials: each GPU and port that another trial holds there is
// claimed by that trial, as it will be once the trial starts; and a trial that holds a place no longer waits in the hosts'
// queue (its tickets go once its claims are held), so its tickets are not
// ahead of anyone. A trial's GPUs held by the sweep's user count under a
// host policy's limits as its claims will. The GPUs free after that are the only ones id may
// take: trials waiting for GPUs that free up go for them only as many as
// fit, in the queue's order. inv is not changed.
func Seen(inv inventory.Inventory, held map[string]Places, id string) inventory.Inventory {
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
					// Claimed already (by the trial, once started): once
					// only, or a policy's limits would count it twice.
					continue
				}
				c := inventory.Claim{Kind: p.Kind, ID: p.ID, UUID: p.UUID, RunID: other, Task: "planned by this sweep"}
				if h.PolicyContext != nil {
					// The sweep's user, whose GPUs a policy's limits count.
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

// placed: run is a trial other than id that holds a place.
func placed(held map[string]Places, run, id string) bool {
	_, ok := held[run]
	return ok && run != id
}
