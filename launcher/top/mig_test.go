package top

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// A MIG instance has a row of its own, naming its GPU, held by the run
// whose claim is on it (claims are per instance).
func TestGPUSectionMIG(t *testing.T) {
	n := func(v int) *int { return &v }
	inst := func(i, dev int, uuid string) inventory.GPU {
		return inventory.GPU{Index: i, UUID: uuid, MemoryUsedMiB: n(12), MemoryTotalMiB: n(9728), Processes: []inventory.Process{},
			MIGInstance: &inventory.MIGInstance{Parent: 0, Device: dev, Profile: "2g.10gb"}}
	}
	snap := Snapshot{Inv: inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "gpu-mig",
		GPUs: []inventory.GPU{
			{Index: 0, UUID: "GPU-0", MIG: true, MemoryUsedMiB: n(24), MemoryTotalMiB: n(40960), Processes: []inventory.Process{}},
			inst(1, 0, "MIG-a"), inst(2, 1, "MIG-b"),
		},
		Claims: []inventory.Claim{{Kind: "gpu", ID: 2, UUID: "MIG-b", RunID: "r7", User: "alice", Task: "worker:0"}},
	}}}}
	snap.Status = schedule.Classify(snap.Inv, schedule.Availability{MaxUtilPct: 10, MaxMemMiB: 1024})
	if total, free := snap.gpuCount(); total != 2 || free != 1 {
		t.Errorf("gpuCount = %d, %d; want the 2 instances, 1 free (not the GPU they split)", total, free)
	}
	s := gpuSection(&snap, false)
	got := strings.Join(s.rows, "\n")
	for _, want := range []string{
		"MIG enabled: used as its MIG instances 1,2",
		"1 (MIG of 0)  N/A   0.0/9.5G",
		"2 (MIG of 0)  N/A   0.0/9.5G",
		"claimed   r7 alice worker:0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("GPU rows lack %q:\n%s", want, got)
		}
	}
}
