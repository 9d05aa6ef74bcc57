package hosttest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/probe/inventory"
)

// A probe over Dial sees each fake host as a machine of its own: its GPUs
// (UUIDs of its own), its claims dir; an unknown or down host fails as an
// unreachable one, and Redial dials again.
func TestProbeThroughDial(t *testing.T) {
	f := hosttest.Start(t,
		hosttest.Profile{Name: "a", GPUs: 2},
		hosttest.Profile{Name: "b", Capture: "idle-4gpu.xml"},
		hosttest.Profile{Name: "c"},
		hosttest.Profile{Name: "d", Down: true})
	hs := []inventory.Host{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}}
	fleet := probe.NewFleet(hs, probe.Options{Dial: f.Dial})
	defer fleet.Close()
	inv := fleet.Probe(context.Background())
	a, b, c, d, e := inv.Hosts[0], inv.Hosts[1], inv.Hosts[2], inv.Hosts[3], inv.Hosts[4]
	for _, h := range []inventory.HostInventory{a, b, c} {
		if h.Err != nil {
			t.Fatalf("%s: %v", h.Name, h.Err.Message)
		}
	}
	if len(a.GPUs) != 2 || len(b.GPUs) != 4 || len(c.GPUs) != 0 || !c.NoNvidiaSMI {
		t.Errorf("GPUs: a %d, b %d, c %d (no nvidia-smi: %v)", len(a.GPUs), len(b.GPUs), len(c.GPUs), c.NoNvidiaSMI)
	}
	if a.GPUs[0].UUID == b.GPUs[0].UUID || a.GPUs[0].UUID == a.GPUs[1].UUID || !strings.HasPrefix(a.GPUs[0].UUID, "GPU-") {
		t.Errorf("UUIDs must be the host's own: %s %s %s", a.GPUs[0].UUID, a.GPUs[1].UUID, b.GPUs[0].UUID)
	}
	if a.ClaimsDir != f.Host("a").ClaimsDir() || a.ClaimsDir == b.ClaimsDir {
		t.Errorf("claims dirs: %s, %s", a.ClaimsDir, b.ClaimsDir)
	}
	if d.Err == nil || d.Err.Kind != inventory.ErrRefused || e.Err == nil || e.Err.Kind != inventory.ErrDNS {
		t.Errorf("down host: %+v; unknown host: %+v", d.Err, e.Err)
	}
	if n := f.Host("a").SMICalls(); n != 1 {
		t.Errorf("a's nvidia-smi ran %d times, want 1", n)
	}
	if _, err := fleet.Redial(context.Background(), "a"); err != nil || f.Host("a").Dials() != 2 {
		t.Errorf("redial: %v, %d dials", err, f.Host("a").Dials())
	}
	f.Host("d").SetDown(false)
	if _, err := fleet.Redial(context.Background(), "d"); err != nil {
		t.Errorf("redial of a host back up: %v", err)
	}
}

// Each host runs from a HOME of its own, with its environment alone.
func TestHostsAreSeparate(t *testing.T) {
	f := hosttest.Start(t, hosttest.Profile{Name: "a"}, hosttest.Profile{Name: "b"})
	t.Setenv("LEAK", "x")
	a, b := f.Host("a"), f.Host("b")
	if got := a.Shell(t, `pwd; echo "$HOME ${LEAK-unset}"; echo hi >mine`); got != a.Home()+"\n"+a.Home()+" unset\n" {
		t.Errorf("a: %q", got)
	}
	if _, err := os.Stat(filepath.Join(b.Home(), "mine")); err == nil {
		t.Error("b sees a's file")
	}
	if got := b.Shell(t, `ls -A`); got != "" {
		t.Errorf("b's home: %q", got)
	}
	if !strings.HasPrefix(a.RunDir("r1"), a.Home()+"/.tfhive/runs-") {
		t.Errorf("run dir %s", a.RunDir("r1"))
	}
}
