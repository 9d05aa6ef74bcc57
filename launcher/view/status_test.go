package view

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
	"github.com/tfhive/tfhive/schedule"
)

const statusGoldenDir = "testdata/status"

// statusFleet is a host of each kind the status shows: unreachable, a
// broken driver, CPU only, no devices, and one whose GPUs are free, busy
// and excluded, with what nvidia-smi may leave unknown.
func statusFleet() (inventory.Inventory, [][]schedule.GPUStatus) {
	n := func(v int) *int { return &v }
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{
		{Name: "gone", Err: &inventory.HostError{Kind: inventory.ErrTimeout, Message: "dial tcp 127.0.0.9:22: i/o timeout"}},
		{Name: "broken", DriverError: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"},
		{Name: "cpu", NoNvidiaSMI: true},
		{Name: "empty"},
		{Name: "gpu01", Driver: "550.54", GPUs: []inventory.GPU{
			{Index: 0, UUID: "GPU-0", Name: "NVIDIA A100-SXM4-80GB", MemoryUsedMiB: n(0), MemoryTotalMiB: n(81920), UtilizationPct: n(0)},
			{Index: 1, UUID: "GPU-1", Name: "NVIDIA A100-SXM4-80GB", MemoryUsedMiB: n(40000), MemoryTotalMiB: n(81920), UtilizationPct: n(97),
				Processes: []inventory.Process{
					{PID: 4242, User: "alice", Command: "python train.py --config configs/very/long/path/to/a/config.yaml"},
					{PID: 4343, Command: "hidden"},
				}},
			{Index: 2, UUID: "GPU-2", Name: "NVIDIA A100-SXM4-80GB", MIG: true, MemoryTotalMiB: n(81920),
				Processes: []inventory.Process{{PID: 7, User: "bob", Command: "sleep"}}},
		}},
	}}
	st := [][]schedule.GPUStatus{nil, nil, nil, nil, {
		{Index: 0, State: schedule.Free},
		{Index: 1, State: schedule.Busy, Reason: "97% utilised"},
		{Index: 2, State: schedule.Excluded, Reason: schedule.ReasonExcluded},
	}}
	return inv, st
}

func TestWriteStatus(t *testing.T) {
	inv, st := statusFleet()
	var txt, js bytes.Buffer
	if err := WriteStatusTable(&txt, inv, st, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteStatusJSON(&js, inv, st); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join(statusGoldenDir, "mixed.txt"), txt.Bytes())
	testkit.Golden(t, filepath.Join(statusGoldenDir, "mixed.json"), js.Bytes())

	// The document is the inventory with each GPU's state: what a script
	// reads back.
	var doc StatusDocument
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Hosts) != 5 || doc.Hosts[0].Reachable || !doc.Hosts[4].Reachable || len(doc.Hosts[4].GPUs) != 3 ||
		doc.Hosts[4].GPUs[1].State != schedule.Busy || doc.Hosts[4].GPUs[2].Reason != schedule.ReasonExcluded ||
		doc.Hosts[4].GPUs[1].Processes[0].PID != 4242 {
		t.Errorf("document read back: %+v", doc)
	}
}

// A GPU in MIG mode is shown with its instances after the host's GPUs,
// each with its profile, its GPU, its own memory and its processes, as
// schedule.Classify states them.
func TestWriteStatusMIG(t *testing.T) {
	n := func(v int) *int { return &v }
	inst := func(i, dev int, uuid, profile string, used int, ps ...inventory.Process) inventory.GPU {
		return inventory.GPU{Index: i, UUID: uuid, Name: "NVIDIA A100-SXM4-40GB", MemoryUsedMiB: n(used), MemoryTotalMiB: n(9728),
			Processes:   append([]inventory.Process{}, ps...),
			MIGInstance: &inventory.MIGInstance{Parent: 0, Device: dev, GPUInstanceID: dev + 1, Profile: profile}}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "gpu-mig", GPUs: []inventory.GPU{
		{Index: 0, UUID: "GPU-0", Name: "NVIDIA A100-SXM4-40GB", MIG: true, MemoryUsedMiB: n(4100), MemoryTotalMiB: n(40960), Processes: []inventory.Process{}},
		{Index: 1, UUID: "GPU-1", Name: "NVIDIA A100-SXM4-40GB", MemoryUsedMiB: n(0), MemoryTotalMiB: n(40960), UtilizationPct: n(0), Processes: []inventory.Process{}},
		inst(2, 0, "MIG-a", "2g.10gb", 4053, inventory.Process{PID: 77, User: "bob", Command: "python serve.py"}),
		inst(3, 1, "MIG-b", "2g.10gb", 12),
		inst(4, 2, "", "", 12),
	}}}}
	inv.Hosts[0].GPUs[4].MIGInstance.Unusable = "nvidia-smi -L gave no UUID for it"
	st := schedule.Classify(inv, schedule.Availability{MaxUtilPct: 10, MaxMemMiB: 1024})
	var txt, js bytes.Buffer
	if err := WriteStatusTable(&txt, inv, st, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteStatusJSON(&js, inv, st); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join(statusGoldenDir, "mig.txt"), txt.Bytes())
	testkit.Golden(t, filepath.Join(statusGoldenDir, "mig.json"), js.Bytes())
}
