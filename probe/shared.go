package probe

import (
	"context"
	"sync"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/transport"
)

// Shared hands one connection per host to many fleets of one tfhive (a
// sweep's trials, each a run with a fleet of its own): each fleet's
// Options.Dial is a Shared's Dialer. An SSH connection carries many
// sessions, so dozens of runs cost the hosts one connection each, not one
// per run, and a run after the first starts without a handshake.
//
// A fleet that closes its connection closes nothing: the Shared does, in
// Close. A fleet that dials a host a second time (Redial after a dropped
// link, or a probe after a failed one) gets a new connection, which the
// later fleets share from then on; the old one stays open for the fleets
// still using it, until Close.
type Shared struct {
	dial   Dialer
	dialer *transport.Dialer

	mu    sync.Mutex
	hosts map[string]*sharedHost
	all   []remote.Executor
}

// sharedHost is one host's current connection; its own lock serialises
// its dials without holding up the other hosts'.
type sharedHost struct {
	mu   sync.Mutex
	conn remote.Executor
}

// NewShared dials as a Fleet with o would: o.Dial, else SSH, or this
// machine for a local host.
func NewShared(o Options) *Shared {
	o.SetDefaults()
	return &Shared{dial: o.Dial, dialer: transport.NewDialer(o.SSH), hosts: map[string]*sharedHost{}}
}

// Dialer is one fleet's Options.Dial.
func (s *Shared) Dialer() Dialer {
	var mu sync.Mutex
	got := map[string]remote.Executor{}
	return func(ctx context.Context, h inventory.Host) (remote.Executor, *inventory.HostError) {
		s.mu.Lock()
		sh := s.hosts[h.Name]
		if sh == nil {
			sh = &sharedHost{}
			s.hosts[h.Name] = sh
		}
		s.mu.Unlock()
		sh.mu.Lock()
		defer sh.mu.Unlock()
		mu.Lock()
		had := got[h.Name]
		mu.Unlock()
		if sh.conn == nil || sh.conn == had {
			// Never dialled, or this fleet dials again: its link is
			// suspect, a new one replaces it for everyone after.
			c, herr := s.dialHost(ctx, h)
			if herr != nil {
				return nil, herr
			}
			sh.conn = c
			s.mu.Lock()
			s.all = append(s.all, c)
			s.mu.Unlock()
		}
		mu.Lock()
		got[h.Name] = sh.conn
		mu.Unlock()
		return sharedConn{sh.conn}, nil
	}
}

func (s *Shared) dialHost(ctx context.Context, h inventory.Host) (remote.Executor, *inventory.HostError) {
	switch {
	case s.dial != nil:
		return s.dial(ctx, h)
	case h.Local:
		return remote.Local{}, nil
	}
	return remote.Dial(ctx, s.dialer, h)
}

// Close closes every connection it opened.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.all {
		c.Close()
	}
	s.all = nil
	s.hosts = map[string]*sharedHost{}
	s.dialer.Close()
}

// sharedConn is a fleet's handle on a shared connection: closing it
// leaves the connection to the others.
type sharedConn struct{ remote.Executor }

func (sharedConn) Close() error { return nil }
