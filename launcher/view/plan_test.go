package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
	"github.com/tfhive/tfhive/schedule"
)

const planGoldenDir = "testdata/plan"

func planIntp(v int) *int { return &v }

func planGPU(host string, i int) inventory.GPU {
	return inventory.GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", host, i), Name: "NVIDIA A100-SXM4-40GB",
		MemoryUsedMiB: planIntp(3), MemoryTotalMiB: planIntp(40960), UtilizationPct: planIntp(0), Processes: []inventory.Process{}}
}

func planGPUHost(name, addr string, n int) inventory.HostInventory {
	h := inventory.HostInventory{
		Host: inventory.Host{Name: name, Address: addr, ClusterAddress: addr},
		Name: name, ClusterAddress: addr, ListeningPorts: []int{22, 2222},
	}
	for i := range n {
		h.GPUs = append(h.GPUs, planGPU(name, i))
	}
	return h
}

func planFixtures() map[string]struct {
	inv inventory.Inventory
	req func(*schedule.Request)
} {
	fleet := func() inventory.Inventory {
		a := planGPUHost("gpu01", "10.0.0.1", 4)
		a.GPUs[2].Processes = []inventory.Process{{PID: 4242, User: "bob", Command: "python other.py", UsedMemoryMiB: planIntp(9000)}}
		a.GPUs[2].MemoryUsedMiB = planIntp(9000)
		b := planGPUHost("gpu02", "10.0.0.2", 4)
		b.GPUs[3].UtilizationPct = planIntp(90)
		c := planGPUHost("gpu03", "10.0.0.3", 2)
		c.Err = &inventory.HostError{Kind: inventory.ErrTimeout, Message: "ssh: dial 10.0.0.3:22: i/o timeout"}
		c.GPUs, c.ListeningPorts = nil, nil
		d := planGPUHost("cpu01", "10.0.0.4", 0)
		d.NoNvidiaSMI = true
		return inventory.Inventory{Hosts: []inventory.HostInventory{a, b, c, d}}
	}
	return map[string]struct {
		inv inventory.Inventory
		req func(*schedule.Request)
	}{
		"chief-evaluator": {fleet(), func(r *schedule.Request) {
			r.PS, r.Chief, r.Evaluator, r.Workers, r.GPUsPerWorker = 2, true, true, 2, 1
			r.Exclude = schedule.Exclusions{"gpu02": {0}}
			r.Command = []string{"python", "train.py", "--model_dir=/data/{run_id}", "--note=it's {job_name}:{task_index}"}
		}},
		"tf-flags-pack": {fleet(), func(r *schedule.Request) {
			r.PS, r.Workers, r.GPUsPerWorker, r.Strategy, r.TFFlags = 1, 2, 2, schedule.StrategyPack, true
			r.Command = []string{"python", "mnist_replica.py", "--gpus={gpus}"}
		}},
		"torch": {fleet(), func(r *schedule.Request) {
			r.Framework, r.Chief, r.Workers, r.GPUsPerWorker = schedule.FrameworkTorch, true, 3, 1
			r.Command = []string{"python", "train.py", "--rank={rank}", "--init=tcp://{master_addr}:{master_port}", "--out=/data/{run_id}"}
		}},
		"torch-cpu-pack": {fleet(), func(r *schedule.Request) {
			r.Framework, r.Workers, r.GPUsPerWorker, r.Strategy = schedule.FrameworkTorch, 3, 0, schedule.StrategyPack
		}},
		// A mgmt network per rack, one InfiniBand subnet: auto takes ib0;
		// cpu01's cluster_address stays, on the interface holding it.
		"nic-auto": {func() inventory.Inventory {
			nic := func(iface, addr string, prefix int) inventory.InterfaceAddr {
				return inventory.InterfaceAddr{Interface: iface, Address: addr, Prefix: prefix, Scope: "global"}
			}
			lo := inventory.InterfaceAddr{Interface: "lo", Address: "127.0.0.1", Prefix: 8, Scope: "host"}
			a := planGPUHost("gpu01", "gpu01.mgmt.example", 2)
			a.Interfaces = []inventory.InterfaceAddr{lo, nic("eno1", "10.0.1.1", 24), nic("ib0", "192.168.50.1", 24), nic("docker0", "172.17.0.1", 16)}
			b := planGPUHost("gpu02", "gpu02.mgmt.example", 2)
			b.Interfaces = []inventory.InterfaceAddr{lo, nic("eno1", "10.0.2.2", 24), nic("ib0", "192.168.50.2", 24), nic("docker0", "172.17.0.1", 16)}
			c := planGPUHost("cpu01", "10.0.3.4", 0)
			c.NoNvidiaSMI, c.Host.ClusterAddressSet = true, true
			c.Interfaces = []inventory.InterfaceAddr{lo, nic("eno1", "10.0.3.4", 24), nic("ib0", "192.168.50.4", 24)}
			return inventory.Inventory{Hosts: []inventory.HostInventory{a, b, c}}
		}(), func(r *schedule.Request) {
			r.PS, r.Workers, r.NIC = 3, 2, schedule.NICAuto
		}},
		"local-cpu": {inventory.Inventory{Hosts: []inventory.HostInventory{func() inventory.HostInventory {
			h := planGPUHost("localhost", "127.0.0.1", 0)
			h.Host.Local, h.NoNvidiaSMI = true, true
			return h
		}()}}, func(r *schedule.Request) {
			r.Workers, r.GPUsPerWorker = 2, 0
		}},
	}
}

func TestPlanGolden(t *testing.T) {
	for name, f := range planFixtures() {
		t.Run(name, func(t *testing.T) {
			r := schedule.NewRequest()
			r.RunID = "20260101-120000-ab12"
			r.Command = []string{"python", "train.py"}
			f.req(&r)
			p, err := schedule.Make(f.inv, r)
			if err != nil {
				t.Fatal(err)
			}
			var txt, js bytes.Buffer
			if err := WritePlan(&txt, p); err != nil {
				t.Fatal(err)
			}
			if err := WritePlanJSON(&js, p); err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, filepath.Join(planGoldenDir, name+".txt"), txt.Bytes())
			testkit.Golden(t, filepath.Join(planGoldenDir, name+".json"), js.Bytes())

			// The JSON document is what `run` executes, so it must carry the
			// whole plan.
			var back schedule.Plan
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&back, p) {
				t.Errorf("plan does not survive a JSON round trip:\n%+v\n%+v", back, *p)
			}
		})
	}
}

func TestViewQuote(t *testing.T) {
	tests := map[string]string{
		"train.py":      "train.py",
		"--a=1,2:3/x@y": "--a=1,2:3/x@y",
		"":              "''",
		"it's":          `'it'\''s'`,
		`{"a":1}`:       `'{"a":1}'`,
		"a b":           "'a b'",
		"$HOME":         "'$HOME'",
	}
	for in, want := range tests {
		if got := viewQuote(in); got != want {
			t.Errorf("viewQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// WritePlanJSON encodes task by task; the bytes are those of the whole
// plan encoded at once, for every fixture and for no tasks at all.
func TestPlanJSONStreamedAsWhole(t *testing.T) {
	plans := map[string]*schedule.Plan{
		"nil tasks":   {Version: 1, RunID: "x"},
		"empty tasks": {Version: 1, RunID: "x", Tasks: []schedule.Task{}, Matrix: []schedule.MatrixHost{}},
		"tricky strings": {Version: 1, RunID: `"tasks": []`, Tasks: []schedule.Task{
			{ID: "worker:0", Env: map[string]string{"A": `"tasks": [] <&>`}, Argv: []string{"echo", "\n"}},
			{ID: "worker:1"}}},
	}
	for name, f := range planFixtures() {
		r := schedule.NewRequest()
		r.RunID = "20260101-120000-ab12"
		r.Command = []string{"python", "train.py"}
		f.req(&r)
		if p, err := schedule.Make(f.inv, r); err == nil {
			plans[name] = p
		}
	}
	for name, p := range plans {
		var whole, streamed bytes.Buffer
		if err := planEncoder(&whole, "").Encode(p); err != nil {
			t.Fatal(err)
		}
		if err := WritePlanJSON(&streamed, p); err != nil {
			t.Fatal(err)
		}
		if streamed.String() != whole.String() {
			t.Errorf("%s: streamed JSON differs:\n%s\nwant:\n%s", name, streamed.String(), whole.String())
		}
	}
	if len(plans) < 7 {
		t.Errorf("only %d plans compared", len(plans))
	}
}

func TestWritePlanCode(t *testing.T) {
	p := &schedule.Plan{RunID: "r", Strategy: "spread", Tasks: []schedule.Task{{ID: "worker:0", Role: "worker", Host: "a"}},
		Code: &schedule.PlanCode{Code: schedule.Code{Hash: strings.Repeat("ab", 32), Bytes: 3 << 20, Files: 12},
			Hosts: []schedule.CodeHost{{Host: "a", Present: true}, {Host: "b"}, {Host: "c"}}}}
	var b strings.Builder
	if err := WritePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	want := "run r: 1 task on 1 host, 0 GPUs, strategy spread\ncode abababababab: 12 files, 3.0 MiB; on a; to send to b, c\n\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("plan starts\n%q\nwant\n%q", b.String()[:min(len(b.String()), len(want))], want)
	}
}
