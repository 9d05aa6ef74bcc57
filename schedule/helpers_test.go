package schedule

import (
	"fmt"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Inventory builders: tests read as "a host with 4 GPUs, GPU 2 busy".

func ip(v int) *int { return &v }

// gpus returns n idle GPUs, indices 0..n-1.
func gpus(n int) []inventory.GPU {
	gs := make([]inventory.GPU, n)
	for i := range gs {
		gs[i] = inventory.GPU{
			Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "Tesla T4",
			MemoryUsedMiB: ip(0), MemoryTotalMiB: ip(15360), UtilizationPct: ip(0),
			Processes: []inventory.Process{},
		}
	}
	return gs
}

type hostOpt func(*inventory.HostInventory)

func host(name string, nGPUs int, opts ...hostOpt) inventory.HostInventory {
	h := inventory.HostInventory{
		Host:           inventory.Host{Name: name, Address: name, ClusterAddress: name},
		Name:           name,
		ClusterAddress: name,
		GPUs:           gpus(nGPUs),
		ListeningPorts: []int{22},
	}
	for i := range h.GPUs {
		h.GPUs[i].UUID = fmt.Sprintf("GPU-%s-%d", name, i)
	}
	for _, o := range opts {
		o(&h)
	}
	return h
}

func addr(a string) hostOpt {
	return func(h *inventory.HostInventory) { h.ClusterAddress, h.Host.ClusterAddress = a, a }
}

func local() hostOpt { return func(h *inventory.HostInventory) { h.Host.Local = true } }

func listening(ports ...int) hostOpt {
	return func(h *inventory.HostInventory) { h.ListeningPorts = ports }
}

func allowed(idx ...int) hostOpt { return func(h *inventory.HostInventory) { h.Host.GPUs = idx } }

func proc(i int, user string, pid int, cmd string) hostOpt {
	return func(h *inventory.HostInventory) {
		h.GPUs[i].Processes = append(h.GPUs[i].Processes, inventory.Process{PID: pid, User: user, Command: cmd, UsedMemoryMiB: ip(500)})
	}
}

func util(i, pct int) hostOpt {
	return func(h *inventory.HostInventory) { h.GPUs[i].UtilizationPct = ip(pct) }
}
func memUsed(i, m int) hostOpt {
	return func(h *inventory.HostInventory) { h.GPUs[i].MemoryUsedMiB = ip(m) }
}
func mig(i int) hostOpt { return func(h *inventory.HostInventory) { h.GPUs[i].MIG = true } }
func unreachable(msg string) hostOpt {
	return func(h *inventory.HostInventory) {
		h.Err = &inventory.HostError{Kind: inventory.ErrRefused, Message: msg}
		h.GPUs, h.ListeningPorts = nil, nil
	}
}
func driverError(msg string) hostOpt {
	return func(h *inventory.HostInventory) { h.DriverError, h.GPUs = msg, nil }
}
func noSMI() hostOpt { return func(h *inventory.HostInventory) { h.NoNvidiaSMI, h.GPUs = true, nil } }

func inv(hs ...inventory.HostInventory) inventory.Inventory { return inventory.Inventory{Hosts: hs} }

// req is a default request for one worker per GPU, command "python train.py".
func req(mod func(*Request)) Request {
	r := NewRequest()
	r.RunID = "r1"
	r.Command = []string{"python", "train.py"}
	if mod != nil {
		mod(&r)
	}
	return r
}

// layout summarizes a plan as one word per task, "worker:0@gpu01[0,1]:2222",
// so a table row can say the whole placement on one line.
func layout(p *Plan) string {
	var s []string
	for _, t := range p.Tasks {
		s = append(s, fmt.Sprintf("%s@%s[%s]:%d", t.ID, t.Host, joinInts(t.GPUs), t.Port))
	}
	return strings.Join(s, " ")
}
