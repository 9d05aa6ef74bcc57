package probe

import (
	"context"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

// Options.Dial opens every host's connection, the local host's too: its
// executor runs the probe, its HostError is the host's, and Redial dials
// through it again. Nothing goes through SSH (the hosts' addresses would
// refuse).
func TestFleetDial(t *testing.T) {
	fake := &remotetest.Fake{}
	fake.Reply(remotetest.Any, "", 7)
	dialled := map[string]int{}
	dial := func(_ context.Context, h inventory.Host) (remote.Executor, *inventory.HostError) {
		dialled[h.Name]++
		if h.Name == "bad" {
			return nil, &inventory.HostError{Kind: inventory.ErrAuth, Message: "no key"}
		}
		return fake, nil
	}
	hs := []inventory.Host{{Name: "local", Local: true}, {Name: "bad", Address: "127.0.0.1", Port: 1}}
	f := NewFleet(hs, Options{Dial: dial, CommandTimeout: 5 * time.Second, Parallel: 1})
	defer f.Close()
	inv := f.Probe(context.Background())
	if e := inv.Hosts[0].Err; e == nil || e.Kind != inventory.ErrCommand || len(fake.Commands()) != 1 {
		t.Errorf("local host: %+v, %d commands on the fake (want the probe, failing with 7)", e, len(fake.Commands()))
	}
	if e := inv.Hosts[1].Err; e == nil || e.Kind != inventory.ErrAuth || e.Message != "no key" {
		t.Errorf("bad host: %+v, want Dial's error", e)
	}
	if e, err := f.Redial(context.Background(), "local"); err != nil || e != fake {
		t.Errorf("redial: %v, %v", e, err)
	}
	if _, err := f.Redial(context.Background(), "bad"); err == nil || err.Error() != "no key" {
		t.Errorf("redial of bad: %v", err)
	}
	if dialled["local"] != 2 || dialled["bad"] != 2 {
		t.Errorf("dials: %v", dialled)
	}
}
