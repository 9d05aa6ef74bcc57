package schedule

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestCheckSameMachine(t *testing.T) {
	machine := func(id, dir string) hostOpt {
		return func(h *inventory.HostInventory) { h.MachineID, h.ProcessTable, h.ClaimsDir = id, "b1-4026531836", dir }
	}
	clone := func(id, table string) hostOpt {
		return func(h *inventory.HostInventory) { h.MachineID, h.ProcessTable, h.ClaimsDir = id, table, "/tmp" }
	}
	sameGPU := func(h *inventory.HostInventory) { h.GPUs[1].UUID = "GPU-a-0" }
	for _, tc := range []struct {
		name  string
		hosts []inventory.HostInventory
		err   string
	}{
		{"distinct", []inventory.HostInventory{host("a", 2, machine("m1", "/tmp")), host("b", 2, machine("m2", "/tmp"))}, ""},
		{"a GPU reported twice", []inventory.HostInventory{host("a", 2), host("b", 2, sameGPU)}, "a and b are the same machine (both report GPU GPU-a-0)"},
		{"one machine id, one claims dir", []inventory.HostInventory{host("a", 0, machine("m1", "/tmp")), host("b", 0, machine("m1", "/tmp"))},
			"a and b are the same machine (both report machine id m1, process table b1-4026531836 and claims in /tmp)"},
		// Clones of one image: one machine id, a process table each.
		{"cloned VMs", []inventory.HostInventory{host("a", 0, clone("m1", "b1-4026531836")), host("b", 0, clone("m1", "b2-4026531836"))}, ""},
		{"containers of one image", []inventory.HostInventory{host("a", 0, clone("m1", "b1-4026532001")), host("b", 0, clone("m1", "b1-4026532002"))}, ""},
		// Containers on one kernel keep claims apart: nothing is shared.
		{"one machine id, claims apart", []inventory.HostInventory{host("a", 0, machine("m1", "/x")), host("b", 0, machine("m1", "/y"))}, ""},
		{"no machine id", []inventory.HostInventory{host("a", 0, machine("-", "/tmp")), host("b", 0, machine("-", "/tmp"))}, ""},
	} {
		err := checkSameMachine(inventory.Inventory{Hosts: tc.hosts})
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}
