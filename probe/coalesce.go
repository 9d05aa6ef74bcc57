package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Coalescer lets many fleets over the same hosts share their probes: a
// sweep's trials, each a run with a fleet of its own over a Shared's
// connections, would otherwise probe every host each (64 trials × 8
// hosts: 512 probes at once, each slowed by the others). A fleet whose
// Options.Coalesce is set probes by joining a probe that starts after it
// asked, or starting one when none is in flight: a caller arriving while
// a probe runs waits for the next one, so that what it gets is never
// older than its request. Every caller waiting when a probe starts gets
// its result, as a copy of its own (Fleet.adopt).
//
// The probes run on a fleet of the Coalescer's own (one per set of hosts
// and probe options), dialling with NewDial's Dial, else as the first
// fleet that asked does: the fleets sharing a Coalescer should share
// their connections (Shared).
//
// One probe may be older than its request: a seed, the newest probe of
// the same hosts while it is under MaxSeedAge (the caller's own, Seed, or
// the Coalescer's last), which each fleet's first probe takes at once
// instead of waiting out one or two more. Such an inventory is Seeded: a
// start planned on it honours the hosts' queue in the supervisor's claim
// check, since a run that queued meanwhile is seen only by a probe begun
// after (launcher/supervisor, Task.Seeded).
type Coalescer struct {
	// NewDial, when set, gives each of the Coalescer's own fleets a Dial
	// of its own (Shared.Dialer) instead of the first asking fleet's: a
	// Shared's Dialer belongs to one fleet, and that fleet's own first
	// dial after the Coalescer's would count as a redial.
	NewDial func() Dialer
	// Now stands in for the clock that ages the seeds; nil: time.Now.
	Now func() time.Time

	mu     sync.Mutex
	lines  map[string]*probeLine
	fleets map[string]*Fleet
	seeds  map[string]*seeded // by probeKey
}

// MaxSeedAge is how old a probe may be and still answer a fleet's first
// probe (counted from its first host's answer): a sweep's trial starting
// on a GPU another has just freed plans on it, the sweep's placement book
// taking out of it what the ended trial held there (launcher/sweep).
// What such a probe cannot show is what changed on the hosts meanwhile:
// a claim taken (the claim check sees it), a run queued (so does the
// claim check of a start planned on a seed), a process started by hand on
// a free GPU or a port bound, as likely as between any probe and its
// claims, over a longer while; the claims a policy's limits count are
// never left to a seed (offer). Long enough to carry a sweep's first wave
// of trials to its second (their first plans are on the sweep's own
// probe, often 4 to 6 s old when the first of them ends).
const MaxSeedAge = 10 * time.Second

// seeded is a probe that may answer a fleet's first probe: its inventory,
// when its first host answered, and the fleet whose sessions the fleets
// planning on it may take (nil: the caller's own, Seed).
type seeded struct {
	inv  inventory.Inventory
	at   time.Time
	from *Fleet
}

// Seed offers inv, what fleet f's own Probe has just answered, to the
// first probe of every fleet that probes f's hosts as f does, as long as
// it is the newest of their probes and under MaxSeedAge: such a probe
// returns inv at once, Seeded, where it would have waited for a probe
// begun after it asked (two, when it came while one was in flight). A
// sweep seeds its first trials' plans with the probe that sized it
// (launcher/sweepjob); each coalesced probe is the seed after it. A
// fleet's later probes are coalesced as always: a run that waits plans
// on a probe begun after it asked.
func (c *Coalescer) Seed(f *Fleet, inv inventory.Inventory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offer(probeKey(f), inv, nil)
}

// offer makes inv key's seed when it is newer than the one there; c.mu
// is held. A probe none of whose hosts answered is none. Nor is one where
// a host's policy caps the GPUs a user or a group holds (limits): the
// claims that count are everyone's of that user or group, taken since
// by runs no claim check of ours sees, so a plan there is made on a
// probe begun after it asked; the older seed goes too.
func (c *Coalescer) offer(key string, inv inventory.Inventory, from *Fleet) {
	var at time.Time
	for _, h := range inv.Hosts {
		if p := h.Policy; p != nil && (len(p.Limits.Users) > 0 || len(p.Limits.Groups) > 0) {
			delete(c.seeds, key)
			return
		}
		if !h.Probed.IsZero() && (at.IsZero() || h.Probed.Before(at)) {
			at = h.Probed
		}
	}
	if at.IsZero() {
		return
	}
	if s := c.seeds[key]; s == nil || s.at.Before(at) {
		c.seeds[key] = &seeded{inv: inv, at: at, from: from}
	}
}

// fresh is key's seed while under MaxSeedAge; c.mu is held.
func (c *Coalescer) fresh(key string) *seeded {
	s := c.seeds[key]
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if s == nil || now().Sub(s.at) >= MaxSeedAge {
		return nil
	}
	return s
}

// probeLine is one key's probes: the one in flight, and the next one,
// which the callers arriving meanwhile join.
type probeLine struct{ running, next *flight }

// flight is one probe and the callers waiting for it. Its context is
// cancelled once none is left waiting: a probe nobody wants is cut short.
type flight struct {
	run     func(context.Context) (inventory.Inventory, error)
	done    chan struct{}
	inv     inventory.Inventory
	err     error
	waiters int
	cancel  context.CancelFunc
}

// NewCoalescer has no probe in flight.
func NewCoalescer() *Coalescer {
	return &Coalescer{lines: map[string]*probeLine{}, fleets: map[string]*Fleet{}, seeds: map[string]*seeded{}}
}

// Close closes the connections of the Coalescer's own fleets.
func (c *Coalescer) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.fleets {
		f.Close()
	}
	c.fleets = map[string]*Fleet{}
}

// probe is fleet f's probe, shared with the fleets probing the same hosts
// the same way, and the fleet that made it (nil for the caller's own
// seed). Its result is shared read-only: f adopts a copy. A fleet's first
// probe is the seed while there is a fresh one (Seeded).
//
// Each host's session of the Coalescer's own probes goes on as the
// first asking fleet's Then, a spare any fleet that adopts the probes may
// take (Fleet.Executor): a sweep's trial that starts on a host where the
// probe it planned on, or a later one, left a session starts its
// multiplexer there, without a session of its own (sshd's fork, a login
// shell, two round trips). A host keeps one such spare at most, the
// newest: the next probe's replaces the one not taken once it is there
// (while that probe runs, a trial planned on the last one may take it).
func (c *Coalescer) probe(ctx context.Context, f *Fleet) (inventory.Inventory, *Fleet, error) {
	key := probeKey(f)
	first := !f.coalesced.Swap(true)
	c.mu.Lock()
	if s := c.fresh(key); s != nil && first {
		c.mu.Unlock()
		inv := s.inv
		inv.Seeded = true
		return inv, s.from, nil
	}
	pf := c.fleets[key]
	if pf == nil {
		o := f.opts
		// Its own probes show no progress, and warn through the fleets
		// that adopt them (each says it once).
		o.Progress, o.Coalesce, o.SSH.Warn = nil, nil, nil
		if c.NewDial != nil {
			o.Dial = c.NewDial()
		}
		pf = NewFleet(f.Hosts, o)
		c.fleets[key] = pf
	}
	c.mu.Unlock()
	inv, err := c.do(ctx, key, func(ctx context.Context) (inventory.Inventory, error) {
		inv := pf.Probe(ctx)
		if ctx.Err() == nil {
			c.mu.Lock()
			c.offer(key, inv, pf)
			c.mu.Unlock()
		}
		return inv, nil
	})
	return inv, pf, err
}

// probeKey tells apart the fleets whose probes differ: other hosts, or
// other things asked of them.
func probeKey(f *Fleet) string {
	names := make([]string, len(f.Hosts))
	for i, h := range f.Hosts {
		names[i] = h.Name
	}
	o := f.opts
	return fmt.Sprintf("%q %t %q %t %t %s", strings.Join(names, "\x00"), o.ClaimsOnly, o.Code, o.Runs, o.NoLiveUse, o.CommandTimeout)
}

// do returns the result of a run of key's line that starts after the call:
// the one it starts when none is in flight, else the next one, which it
// joins (started, with the first joiner's run, once the one in flight
// ends). A caller whose ctx ends stops waiting with ctx's error.
func (c *Coalescer) do(ctx context.Context, key string, run func(context.Context) (inventory.Inventory, error)) (inventory.Inventory, error) {
	c.mu.Lock()
	l := c.lines[key]
	if l == nil {
		l = &probeLine{}
		c.lines[key] = l
	}
	var f *flight
	switch {
	case l.running == nil:
		f = &flight{run: run, done: make(chan struct{})}
		c.start(l, f)
	case l.next != nil:
		f = l.next
	default:
		f = &flight{run: run, done: make(chan struct{})}
		l.next = f
	}
	f.waiters++
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.inv, f.err
	case <-ctx.Done():
		c.mu.Lock()
		f.waiters--
		if f.waiters == 0 && f.cancel != nil {
			f.cancel()
		}
		c.mu.Unlock()
		return inventory.Inventory{}, ctx.Err()
	}
}

// start runs f as l's probe in flight; c.mu is held. When it ends, l's
// next probe starts, unless all its callers have gone.
func (c *Coalescer) start(l *probeLine, f *flight) {
	l.running = f
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() {
		inv, err := f.run(ctx)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		f.inv, f.err = inv, err
		close(f.done)
		l.running = nil
		if n := l.next; n != nil {
			l.next = nil
			if n.waiters > 0 {
				c.start(l, n)
			}
		}
	}()
}

// adopt makes shared, a coalesced probe's inventory, fleet f's own, as
// its own Probe would have: a copy (the planner may change its own),
// with the hosts f left taken out, and f connected to every host that
// answered (over the same shared connection, with no round trip).
func (f *Fleet) adopt(ctx context.Context, shared inventory.Inventory, err error) inventory.Inventory {
	f.spares.DropAll()
	inv := inventory.Inventory{Hosts: make([]inventory.HostInventory, len(f.Hosts)), Seeded: err == nil && shared.Seeded}
	for i, h := range f.Hosts {
		hi := inventory.HostInventory{Host: h, Name: h.Name, ClusterAddress: h.ClusterAddress, GPUs: []inventory.GPU{}, ListeningPorts: []int{}, Claims: []inventory.Claim{}}
		if err == nil && i < len(shared.Hosts) {
			hi = cloneHost(shared.Hosts[i])
		} else {
			msg := "probe not done"
			if err != nil {
				msg = err.Error()
			}
			hi.Err = &inventory.HostError{Kind: inventory.ErrSSH, Message: msg}
		}
		f.mu.Lock()
		why, left := f.left[i]
		f.mu.Unlock()
		switch {
		case left:
			hi = inventory.HostInventory{Host: h, Name: h.Name, ClusterAddress: h.ClusterAddress, GPUs: []inventory.GPU{}, ListeningPorts: []int{}, Claims: []inventory.Claim{},
				Err: &inventory.HostError{Kind: inventory.ErrLost, Message: why}}
		case hi.Err == nil:
			if _, herr := f.connect(ctx, i); herr != nil {
				hi.Err = herr
			}
		case err == nil && (hi.Err.Kind == inventory.ErrSSH || hi.Err.Kind == inventory.ErrTimeout):
			// The probe's link failed and was dropped: f's handle on it
			// goes too, so that it dials again.
			f.mu.Lock()
			e := f.execs[i]
			f.mu.Unlock()
			if e != nil {
				f.forget(i, e)
			}
		}
		f.warnOf(&hi)
		inv.Hosts[i] = hi
	}
	if f.opts.Progress != nil {
		f.opts.Progress(len(f.Hosts), len(f.Hosts))
	}
	return inv
}

// cloneHost is h with its own lists: the ones a planner may change.
// What pointers share (policy, error) is read only.
func cloneHost(h inventory.HostInventory) inventory.HostInventory {
	h.GPUs = slices.Clone(h.GPUs)
	for i := range h.GPUs {
		h.GPUs[i].Processes = slices.Clone(h.GPUs[i].Processes)
	}
	h.ListeningPorts = slices.Clone(h.ListeningPorts)
	h.Claims = slices.Clone(h.Claims)
	h.Interfaces = slices.Clone(h.Interfaces)
	h.Tickets = slices.Clone(h.Tickets)
	h.GPUUse = slices.Clone(h.GPUUse)
	return h
}
