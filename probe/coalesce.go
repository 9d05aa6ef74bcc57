package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

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
// One probe may be older than its request: a seed (Seed), a probe the
// caller made itself just before, which each fleet's first probe takes
// instead of waiting out one or two more, until Unseed.
type Coalescer struct {
	// NewDial, when set, gives each of the Coalescer's own fleets a Dial
	// of its own (Shared.Dialer) instead of the first asking fleet's: a
	// Shared's Dialer belongs to one fleet, and that fleet's own first
	// dial after the Coalescer's would count as a redial.
	NewDial func() Dialer

	mu     sync.Mutex
	lines  map[string]*probeLine
	fleets map[string]*Fleet
	seed   *seeded
}

// seeded is the inventory a Seed offers the first probes of the fleets
// whose probes are key's.
type seeded struct {
	key string
	inv inventory.Inventory
}

// Seed offers inv, what fleet f's own Probe has just answered, to the
// first probe of every fleet that probes f's hosts as f does, until
// Unseed: such a probe returns inv at once, where it would have waited
// for a probe begun after it asked (two, when it came while one was in
// flight). A sweep seeds its first trials' plans with the probe that
// sized it (launcher/sweepjob): nothing of the sweep has run since, its
// placement book keeps the trials off each other's GPUs, and a claim
// someone took meanwhile is seen by the supervisor's claim check as
// always. A fleet's later probes, and every probe once unseeded, are
// coalesced as before: the seed never answers a run that waits.
func (c *Coalescer) Seed(f *Fleet, inv inventory.Inventory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seed = &seeded{key: probeKey(f), inv: inv}
}

// Unseed ends the Seed: from now on every probe is one begun after it
// asked. A sweep unseeds once a trial has ended: a GPU that one frees is
// seen only by a new probe.
func (c *Coalescer) Unseed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seed = nil
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
	return &Coalescer{lines: map[string]*probeLine{}, fleets: map[string]*Fleet{}}
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
// the same way, and the fleet that made it (nil for a seed). Its result
// is shared read-only: f adopts a copy.
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
	if s := c.seed; s != nil && first && s.key == key {
		c.mu.Unlock()
		return s.inv, nil, nil
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
		return pf.Probe(ctx), nil
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
	inv := inventory.Inventory{Hosts: make([]inventory.HostInventory, len(f.Hosts))}
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
