package probe

import (
	"context"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
)

// countingExec is a connection that counts its closes.
type countingExec struct {
	remote.Local
	closed int
}

func (c *countingExec) Close() error { c.closed++; return nil }

// Many fleets share one connection per host; a fleet's Close closes
// nothing; a fleet that dials again gets a new one, which later fleets
// share; Close closes them all.
func TestSharedConnections(t *testing.T) {
	var dialled []*countingExec
	s := NewShared(Options{Dial: func(ctx context.Context, h inventory.Host) (remote.Executor, *inventory.HostError) {
		c := &countingExec{}
		dialled = append(dialled, c)
		return c, nil
	}})
	h := inventory.Host{Name: "h1"}
	ctx := context.Background()
	a, b := s.Dialer(), s.Dialer()
	ea, _ := a(ctx, h)
	eb, _ := b(ctx, h)
	if len(dialled) != 1 || ea.(sharedConn).Executor != eb.(sharedConn).Executor {
		t.Fatalf("%d dials for two fleets, want 1", len(dialled))
	}
	ea.Close()
	if dialled[0].closed != 0 {
		t.Fatal("a fleet's close closed the shared connection")
	}
	// Fleet a dials h1 again (a redial): a new connection, shared from
	// then on; b's old one stays open.
	ea2, _ := a(ctx, h)
	if len(dialled) != 2 || ea2.(sharedConn).Executor != dialled[1] || dialled[0].closed != 0 {
		t.Fatalf("redial: %d dials", len(dialled))
	}
	ec, _ := s.Dialer()(ctx, h)
	if ec.(sharedConn).Executor != dialled[1] {
		t.Fatal("a later fleet did not get the new connection")
	}
	s.Close()
	if dialled[0].closed != 1 || dialled[1].closed != 1 {
		t.Fatalf("Close: closes %d %d", dialled[0].closed, dialled[1].closed)
	}
}
