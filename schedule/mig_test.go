package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// migSlices makes GPU parent of the host a GPU in MIG mode with n MIG
// instances, appended after its GPUs as the probe lists them (UUID
// MIG-HOST-PARENT-K, 9728 MiB each, 12 MiB used: an idle instance).
func migSlices(parent, n int) hostOpt {
	return func(h *inventory.HostInventory) {
		h.GPUs[parent].MIG, h.GPUs[parent].UtilizationPct = true, nil
		for k := range n {
			h.GPUs = append(h.GPUs, inventory.GPU{
				Index: len(h.GPUs), UUID: fmt.Sprintf("MIG-%s-%d-%d", h.Name, parent, k), Name: "NVIDIA A100-SXM4-40GB",
				MemoryUsedMiB: ip(12), MemoryTotalMiB: ip(9728), Processes: []inventory.Process{},
				MIGInstance: &inventory.MIGInstance{Parent: parent, Device: k, GPUInstanceID: k + 1, Profile: "2g.10gb"},
			})
		}
	}
}

func migUnusable(i int, why string) hostOpt {
	return func(h *inventory.HostInventory) { h.GPUs[i].MIGInstance.Unusable, h.GPUs[i].UUID = why, "" }
}

func TestClassifyMIG(t *testing.T) {
	in := inv(
		// GPU 0 in MIG mode with instances 2, 3, 4; GPU 1 whole.
		host("a", 2, migSlices(0, 3), proc(3, "bob", 7, "python serve.py"), migUnusable(4, "nvidia-smi -L gave no UUID for it")),
		// MIG mode and no instance made.
		host("b", 1, migSlices(0, 0)),
		host("c", 1, migSlices(0, 2), allowed(0)),
		host("d", 2, migSlices(0, 1), migSlices(1, 1), allowed(1)),
	)
	a := Availability{MaxUtilPct: 10, MaxMemMiB: 1024, Exclude: Exclusions{"a": {2}}}
	st := Classify(in, a)
	want := [][]GPUStatus{
		{{0, Excluded, "MIG enabled: used as its MIG instances 2,3,4"}, {1, Free, ""},
			// --exclude a:2 names the instance.
			{2, Excluded, ReasonExcluded}, {3, Busy, "bob:7 python serve.py"}, {4, Excluded, "MIG instance: nvidia-smi -L gave no UUID for it"}},
		{{0, Excluded, ReasonMIGNoInstances}},
		// gpus: [0] lists GPU 0, and so its instances.
		{{0, Excluded, "MIG enabled: used as its MIG instances 1,2"}, {1, Free, ""}, {2, Free, ""}},
		{{0, Excluded, "MIG enabled: used as its MIG instances 2"}, {1, Excluded, "MIG enabled: used as its MIG instances 3"},
			{2, Excluded, ReasonNotListed}, {3, Free, ""}},
	}
	for i := range want {
		if fmt.Sprint(st[i]) != fmt.Sprint(want[i]) {
			t.Errorf("host %s\n got %v\nwant %v", in.Hosts[i].Name, st[i], want[i])
		}
	}
	// --exclude of the GPU takes its instances out too.
	st = Classify(in, Availability{MaxUtilPct: 10, MaxMemMiB: 1024, Exclude: Exclusions{"c": {0}}})
	if st[2][1].State != Excluded || st[2][2].State != Excluded {
		t.Errorf("--exclude c:0: instances %v, want excluded", st[2][1:])
	}
}

func TestMakeMIG(t *testing.T) {
	tests := []struct {
		name   string
		inv    inventory.Inventory
		mod    func(*Request)
		layout string
		env    []string // CUDA_VISIBLE_DEVICES of each task
		err    string   // a CapacityError's message holds it
		lines  string   // and its lines
	}{
		{
			name:   "one instance per task, a whole GPU first",
			inv:    inv(host("a", 2, migSlices(0, 3))),
			mod:    func(r *Request) { r.Workers = 3 },
			layout: "worker:0@a[1]:2222 worker:1@a[2]:2223 worker:2@a[3]:2224",
			env:    []string{"1", "MIG-a-0-0", "MIG-a-0-1"},
		},
		{
			name: "claims are per instance: another run's leaves the next one",
			inv:  inv(host("a", 1, migSlices(0, 2), claimed("gpu", 1, "r0"))),
			// One worker: instance 1 is r0's.
			layout: "worker:0@a[2]:2222",
			env:    []string{"MIG-a-0-1"},
		},
		{
			name:  "tasks of 2 GPUs never get instances",
			inv:   inv(host("a", 1, migSlices(0, 4))),
			mod:   func(r *Request) { r.Workers, r.GPUsPerWorker = 1, 2 },
			err:   "not enough free GPUs: asked 2 (1 worker × 2), found 0",
			lines: "a: 0 free; excluded 0 (MIG enabled: used as its MIG instances 1,2,3,4), 1,2,3,4 (a MIG instance is one task's only GPU; tasks here ask for 2)",
		},
		{
			name: "a ps of 1 GPU takes an instance, workers of 2 the whole GPUs",
			inv:  inv(host("a", 3, migSlices(0, 1))),
			mod: func(r *Request) {
				r.PS, r.GPUsPerPS, r.Workers, r.GPUsPerWorker = 1, 1, 1, 2
			},
			layout: "ps:0@a[3]:2222 worker:0@a[1,2]:2223",
			env:    []string{"MIG-a-0-0", "1,2"},
		},
		{
			name: "torch ranks get no instances",
			inv:  inv(host("a", 1, migSlices(0, 2))),
			mod: func(r *Request) {
				r.Framework, r.Workers = FrameworkTorch, 1
			},
			err:   "not enough free GPUs",
			lines: "a: 0 free; excluded 0 (MIG enabled: used as its MIG instances 1,2), 1,2 (" + ReasonMIGTorch + ")",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req(func(r *Request) {
				r.Workers = 1
				if tt.mod != nil {
					tt.mod(r)
				}
			})
			p, err := Make(tt.inv, r)
			if tt.err != "" {
				var ce *CapacityError
				if !errors.As(err, &ce) || !strings.Contains(ce.Msg, tt.err) || strings.Join(ce.Lines, "\n") != tt.lines {
					t.Fatalf("err = %v (lines %q), want a capacity error %q with lines %q", err, linesOf(err), tt.err, tt.lines)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := layout(p); got != tt.layout {
				t.Errorf("layout %s, want %s", got, tt.layout)
			}
			for i, w := range tt.env {
				if got := p.Tasks[i].Env["CUDA_VISIBLE_DEVICES"]; got != w {
					t.Errorf("%s: CUDA_VISIBLE_DEVICES=%q, want %q", p.Tasks[i].ID, got, w)
				}
			}
		})
	}
}

func linesOf(err error) []string {
	var ce *CapacityError
	if errors.As(err, &ce) {
		return ce.Lines
	}
	return nil
}

// A policy's reservation of a GPU in MIG mode reserves its instances.
func TestPolicyReservesMIGInstances(t *testing.T) {
	h := host("a", 2, migSlices(0, 2))
	h.Policy = &inventory.Policy{Reserved: []inventory.Reservation{{Group: "vision", GPUs: []int{0}, Hours: "00:00-24:00"}}}
	h.PolicyContext = &inventory.PolicyContext{User: "amy", Weekday: 3, Minute: 600}
	_, err := Make(inv(h), req(func(r *Request) { r.Workers = 2 }))
	var ce *CapacityError
	if !errors.As(err, &ce) || len(ce.Lines) != 1 || !strings.Contains(ce.Lines[0], "policy 2,3 (policy of a: GPU 0 is reserved for group vision") {
		t.Fatalf("err = %v, lines %q; want instances 2,3 refused as GPU 0's reservation", err, linesOf(err))
	}
}

// A run waiting ahead for tasks of 2 GPUs keeps no MIG instance: it
// could not use one, and a one-GPU run behind it may.
func TestQueueKeepsNoMIGForBigTasks(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	// One whole GPU (1) and two instances (2, 3): big does not fit now.
	h := host("a", 2, migSlices(0, 2))
	h.Tickets = []inventory.Ticket{ticket("big", "bob", PriorityNormal, t0, 2)}
	r := req(func(r *Request) { r.Workers, r.QueueSince = 1, t0.Add(time.Minute) })
	p, err := Make(inv(h), r)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is kept for big (GPU 1 and an instance are not 2 GPUs for
	// it), so this run gets GPU 1.
	if got := layout(p); got != "worker:0@a[1]:2222" {
		t.Errorf("layout %s, want worker:0 on GPU 1", got)
	}
}
