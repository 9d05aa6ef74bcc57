package probe

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestWarnClones(t *testing.T) {
	var got []string
	f := NewFleet(nil, Options{})
	f.opts.SSH.Warn = func(msg string) { got = append(got, msg) }
	f.warnClones(inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "a", MachineID: "m1", ProcessTable: "1"}, {Name: "b", MachineID: "m1", ProcessTable: "2"}}})
	if len(got) != 0 {
		t.Fatalf("warned without being asked: %q", got)
	}
	f.SayClones()
	h := func(name, id, table string) inventory.HostInventory {
		return inventory.HostInventory{Name: name, MachineID: id, ProcessTable: table}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{
		h("a", "m1", "b1-1"), h("b", "m1", "b2-1"), h("c", "m2", "b3-1"),
		h("d", "m1", "b1-2"), h("e", "-", "b4-1"), h("f", "-", "b5-1"),
		// One machine under two names: planning's to refuse, not a clone.
		h("g", "m3", "b6-1"), h("g2", "m3", "b6-1"),
	}}
	f.warnClones(inv)
	f.warnClones(inv) // a waiting run probes again: said once
	if len(got) != 1 || !strings.HasPrefix(got[0], "a, b, d report one machine id (m1): clones of one image?") {
		t.Fatalf("warnings %q", got)
	}
}
