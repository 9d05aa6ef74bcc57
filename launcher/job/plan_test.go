package job

import (
	"fmt"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// burst is a sweep's wave as its last trial plans it: 8 hosts of 8 GPUs,
// 63 sibling trials holding one GPU and one port each in the book (8 a
// host, 7 on the last), the first half of them started, which the probe
// shows as a started trial is seen: its claims (GPU by UUID, port), its
// process on the GPU and its port listening.
func burst() (*sweep.Book, map[string]sweep.Places, inventory.Inventory, schedule.Request) {
	const hosts, perHost, siblings = 8, 8, 63
	zero, total := 0, 81559
	t0 := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	var inv inventory.Inventory
	for i := range hosts {
		name := fmt.Sprintf("gpu%02d", i)
		h := inventory.HostInventory{
			Host: inventory.Host{Name: name, Address: name, ClusterAddress: name, User: "alice"},
			Name: name, ClusterAddress: name, ListeningPorts: []int{22}, Me: "alice", Probed: t0,
		}
		for g := range perHost {
			h.GPUs = append(h.GPUs, inventory.GPU{Index: g, UUID: fmt.Sprintf("GPU-%s-%d", name, g), Name: "NVIDIA H100",
				MemoryUsedMiB: &zero, MemoryTotalMiB: &total, UtilizationPct: &zero, Processes: []inventory.Process{}})
		}
		inv.Hosts = append(inv.Hosts, h)
	}
	book, held := sweep.NewBook(), map[string]sweep.Places{}
	for k := range siblings {
		hi, g := k/perHost, k%perHost
		h := &inv.Hosts[hi]
		id, port := fmt.Sprintf("sw-%03d", k+1), schedule.DefaultPortLo+g
		places := sweep.Places{h.Name: {{Kind: "gpu", ID: g, UUID: h.GPUs[g].UUID}, {Kind: "port", ID: port}}}
		book.Place(id, inv, func(inventory.Inventory) (sweep.Places, error) { return places, nil })
		held[id] = places
		if k >= siblings/2 {
			continue
		}
		pid := 10000 + k
		for _, c := range places[h.Name] {
			h.Claims = append(h.Claims, inventory.Claim{Kind: c.Kind, ID: c.ID, UUID: c.UUID, RunID: id, Task: "worker:0",
				User: "alice", UID: 1000, PID: pid, Since: t0, File: fmt.Sprintf("/tmp/tfhive-claims/%s-%d", c.Kind, c.ID)})
		}
		used := 2048
		h.GPUs[g].MemoryUsedMiB = &used
		h.GPUs[g].Processes = []inventory.Process{{PID: pid, User: "alice", Command: "python train.py --lr 0.01", UsedMemoryMiB: &used}}
		h.ListeningPorts = append(h.ListeningPorts, port)
	}
	req := schedule.NewRequest()
	req.Workers, req.GPUsPerWorker, req.RunID = 1, 1, fmt.Sprintf("sw-%03d", siblings+1)
	req.Command = []string{"python", "train.py", "--lr", "0.001"}
	req.QueueSince, req.NoBackfill = t0, true
	return book, held, inv, req
}

// The burst's last trial gets the one GPU its 63 siblings left.
func TestBurstLastTrial(t *testing.T) {
	book, _, inv, req := burst()
	p, err := BookPlanner(book)(inv, req)
	if err != nil {
		t.Fatal(err)
	}
	if tk := p.Tasks[0]; tk.Host != "gpu07" || len(tk.GPUs) != 1 || tk.GPUs[0] != 7 || tk.Port != schedule.DefaultPortLo+7 {
		t.Fatalf("planned %s %v port %d, want gpu07 [7] port %d", tk.Host, tk.GPUs, tk.Port, schedule.DefaultPortLo+7)
	}
}

// One Place of a wave's burst, as the book's lock holds it: the view of
// the book (sweep.Seen) and the plan on it.
func BenchmarkBookPlaceBurst(b *testing.B) {
	book, _, inv, req := burst()
	plan := BookPlanner(book)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := plan(inv, req); err != nil {
			b.Fatal(err)
		}
	}
}

// The view alone (sweep.Seen), of the same burst.
func BenchmarkSeenBurst(b *testing.B) {
	_, held, inv, req := burst()
	b.ReportAllocs()
	for b.Loop() {
		sweep.Seen(inv, held, nil, req.RunID)
	}
}
