package sweep

import (
	"maps"
	"slices"
	"sync"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
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
//
// It also knows which trials ended (End): a trial may plan on a probe
// older than its siblings' ends (probe.Coalescer's seed), which still
// shows what an ended trial held; the view takes that out.
type Book struct {
	mu    sync.Mutex
	held  map[string]Places // by trial id
	ended map[string]bool
}

// Places are a trial's claims to be, by host: kind and id (a GPU's index,
// a port) are what count.
type Places map[string][]inventory.Claim

// NewBook is an empty book.
func NewBook() *Book { return &Book{held: map[string]Places{}, ended: map[string]bool{}} }

// Place plans trial id with the book locked: plan gets inv as the book
// shows it to that trial (Seen) and returns the claims its plan will
// take, by host, which are the trial's until Drop. The trial's earlier places go
// first: a trial holds one plan at a time. A plan that fails holds
// nothing.
func (b *Book) Place(id string, inv inventory.Inventory, plan func(inventory.Inventory) (Places, error)) error {
	// What of the view is the probe's alone is made before the lock: a
	// wave of trials plans one at a time behind it. A trial that ends
	// meanwhile is still what the probe shows, claimed.
	b.mu.Lock()
	ended := maps.Clone(b.ended)
	b.mu.Unlock()
	delete(ended, id)
	v := newView(inv, ended)
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
	// Planning again (a trial run again under its id) it runs.
	delete(b.ended, id)
	places, err := plan(v.see(b.held, id))
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

// End gives back trial id's places and says it ended: its tasks are gone
// from its hosts, and a probe that still shows its claims shows GPUs
// it freed (Seen).
func (b *Book) End(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
	b.ended[id] = true
}

// Seen is inv as trial id must plan on it, given held, the places of a
// sweep's trials, and ended, the trials that ended: each GPU and port
// that another trial holds there is claimed by that trial, as it will be
// once the trial starts; and a trial that holds a place no longer waits
// in the hosts' queue (its tickets go once its claims are held), so its
// tickets are not ahead of anyone. A trial's GPUs held by the sweep's
// user count under a host policy's limits as its claims will. The GPUs
// free after that are the only ones id may take: trials waiting for GPUs
// that free up go for them only as many as fit, in the queue's order.
//
// An ended trial's claims that inv still shows (the sweep's user's, by
// the kernel's word: a label naming the trial says nothing alone) are
// gone, and its processes on their GPUs with their load (schedule.Without:
// an intruder stays, and keeps its GPU busy); its tickets stay, the run
// ahead of a sibling in the queue as inv saw it. inv is not changed.
func Seen(inv inventory.Inventory, held map[string]Places, ended map[string]bool, id string) inventory.Inventory {
	return newView(inv, ended).see(held, id)
}

// view is what Seen makes of a probe before it reads the book: a copy of
// its hosts to change, and the claims it saw.
type view struct {
	inv inventory.Inventory
	// claimed is the claims the probe saw, a set a host.
	claimed []map[claimKey]bool
}

// claimKey is a claim as places are kept apart: by kind and id.
type claimKey struct {
	kind string
	id   int
}

func newView(inv inventory.Inventory, ended map[string]bool) view {
	if len(ended) > 0 {
		inv = schedule.Without(inv, func(h *inventory.HostInventory, c inventory.Claim) bool {
			return ended[c.RunID] && c.User != "" && c.User == h.Me && c.Blocked == ""
		})
	}
	v := view{inv: inv, claimed: make([]map[claimKey]bool, len(inv.Hosts))}
	v.inv.Hosts = slices.Clone(inv.Hosts)
	for i := range inv.Hosts {
		cs := inv.Hosts[i].Claims
		if len(cs) == 0 {
			continue
		}
		v.claimed[i] = make(map[claimKey]bool, len(cs))
		for _, c := range cs {
			v.claimed[i][claimKey{c.Kind, c.ID}] = true
		}
	}
	return v
}

// heldPlace is a place that trial holds.
type heldPlace struct {
	trial string
	*inventory.Claim
}

// see is the view with held's places and tickets as Seen says: it
// changes the view's hosts, so it is called once a view.
func (v view) see(held map[string]Places, id string) inventory.Inventory {
	// The other trials' places by host, each host's in the trials'
	// order (by id), so that the view is the same whatever the map's
	// order: one pass over the book, not one a host.
	trials := make([]string, 0, len(held))
	for other := range held {
		if other != id {
			trials = append(trials, other)
		}
	}
	slices.Sort(trials)
	byHost := map[string][]heldPlace{}
	for _, other := range trials {
		for host, cs := range held[other] {
			for j := range cs {
				byHost[host] = append(byHost[host], heldPlace{other, &cs[j]})
			}
		}
	}
	for i := range v.inv.Hosts {
		h := &v.inv.Hosts[i]
		var claims []inventory.Claim // the probe's and the new; nil while none is new
		for _, p := range byHost[h.Name] {
			if v.claimed[i][claimKey{p.Kind, p.ID}] {
				// Claimed already (by the trial, once started): once
				// only, or a policy's limits would count it twice.
				continue
			}
			c := inventory.Claim{Kind: p.Kind, ID: p.ID, UUID: p.UUID, RunID: p.trial, Task: "planned by this sweep"}
			if h.PolicyContext != nil {
				// The sweep's user, whose GPUs a policy's limits count.
				c.User = h.PolicyContext.User
			}
			if claims == nil {
				// A copy: the probe's claims stay as they are.
				claims = append(make([]inventory.Claim, 0, len(h.Claims)+len(byHost[h.Name])), h.Claims...)
			}
			claims = append(claims, c)
		}
		if claims != nil {
			h.Claims = claims
		}
		if slices.ContainsFunc(h.Tickets, func(t inventory.Ticket) bool { return placed(held, t.RunID, id) }) {
			h.Tickets = slices.DeleteFunc(slices.Clone(h.Tickets), func(t inventory.Ticket) bool { return placed(held, t.RunID, id) })
		}
	}
	return v.inv
}

// placed: run is a trial other than id that holds a place.
func placed(held map[string]Places, run, id string) bool {
	_, ok := held[run]
	return ok && run != id
}
