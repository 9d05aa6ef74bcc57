// Package schedule is the pure planner: a probed inventory and a request in,
// a plan out (GPU classification, placement, ports, TF_CONFIG and torch
// environments), or an error saying what is wrong or missing. It imports
// only the standard library and probe/inventory: no I/O, no SSH, no clock.
package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// PlanVersion is the version of the plan JSON document; it changes only when
// a field changes meaning or goes away, not when one is added.
const PlanVersion = 1

// Plan is everything needed to start a run, computed before anything is
// started. Its JSON form is the document `tfhive plan --json` prints and
// `tfhive run` executes:
//
//	{
//	  "version": 1,
//	  "run_id": "…",
//	  "framework": "tensorflow" | "torch",
//	  "strategy": "spread" | "pack",
//	  "cluster": {"chief": ["addr:port"], "ps": […], "worker": […]},   // tensorflow only
//	  "evaluator": "addr:port",          // only with --evaluator
//	  "master": "addr:port",             // torch only: MASTER_ADDR:MASTER_PORT
//	  "tasks": [{
//	    "id": "worker:0", "role": "worker", "index": 0,
//	    "host": "gpu01",                   // the host's name in output (as written, :port included)
//	    "address": "10.0.0.1:2222",        // what the cluster spec lists; torch: "10.0.0.1"
//	    "port": 2222,                      // tensorflow only
//	    "gpus": [0, 1], "gpu_uuids": ["GPU-…", "GPU-…"],   // [] for a CPU task
//	    "env": {"TF_CONFIG": "…", "CUDA_VISIBLE_DEVICES": "0,1", …},
//	    "tf_config": "{\"cluster\":…}",   // also in env, as a string; tensorflow only
//	    "argv": ["python", "train.py", …]  // placeholders substituted
//	  }, …],                               // order: ps, chief, worker, evaluator; by index
//	  "matrix": [{
//	    "host": "gpu01", "address": "10.0.0.1", "reachable": true,
//	    "interface": "eth1",               // with --nic: what carries its tasks' traffic
//	    "note": "…",                       // why a host has no usable GPUs, if so
//	    "gpus": [{"index": 0, "uuid": "GPU-…", "state": "free" | "busy" | "excluded",
//	              "reason": "bob:1234 python train.py", "task": "worker:0"}]
//	  }, …],                               // every host of the inventory, in its order
//	  "code": {"hash": "…", "bytes": 1234, "files": 12,   // only with --sync
//	           "hosts": [{"host": "gpu01", "dir": "/home/me/.cache/tfhive/code/…", "present": true}]}
//	}
//
// "cluster" omits empty roles and never holds the evaluator, as TensorFlow
// requires; each task's TF_CONFIG is that cluster plus its own "task". A GPU
// given to a task keeps state "free" (it was free when planned) and names
// the task in "task".
//
// A torch plan (see torch.go) has no "cluster", "evaluator", "tf_config" or
// task ports: its tasks are the ranks, in rank order (the chief first if
// there is one), and "master" is where rank 0 serves the rendezvous. Each
// task's env holds MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK,
// LOCAL_WORLD_SIZE and GROUP_RANK instead of TF_CONFIG.
//
// With --nic (see nic.go), the addresses are those of the interfaces
// chosen, each task's env also holds NCCL_SOCKET_IFNAME and
// GLOO_SOCKET_IFNAME naming its host's, and "nic" and the matrix's
// "interface" say what was chosen.
type Plan struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	// Framework is "tensorflow" (--framework tf) or "torch".
	Framework string      `json:"framework"`
	Strategy  string      `json:"strategy"`
	Cluster   ClusterSpec `json:"cluster,omitzero"`
	Evaluator string      `json:"evaluator,omitempty"`
	// Master is a torch plan's MASTER_ADDR:MASTER_PORT (IPv6 bracketed).
	Master string `json:"master,omitempty"`
	// NIC is --nic as asked: "auto" or an interface name; "" without it.
	NIC    string       `json:"nic,omitempty"`
	Tasks  []Task       `json:"tasks"`
	Matrix []MatrixHost `json:"matrix"`
	// Code is the --sync tree and its directory on each host used.
	Code *PlanCode `json:"code,omitempty"`
	// Reservations are ours that hold, at the probe, GPUs its tasks were
	// given: the run is inside them (reservations.go); its report names
	// them.
	Reservations []PlanReservation `json:"reservations,omitempty"`
}

// Framework values of a plan; FrameworkTorch is the other.
const planTensorFlow = "tensorflow"

// Torch tells a torch plan, whose every task is a rank, from a TensorFlow one.
func (p *Plan) Torch() bool { return p.Framework == FrameworkTorch }

// Task is one process to start.
type Task struct {
	ID       string   `json:"id"` // role:index, as in TFHIVE_TASK and log prefixes
	Role     string   `json:"role"`
	Index    int      `json:"index"`
	Host     string   `json:"host"`          // inventory.HostInventory.Name
	Address  string   `json:"address"`       // addr:port, as listed in the cluster spec; torch: addr alone
	Port     int      `json:"port,omitzero"` // 0 in torch plans: ranks need no port of their own
	GPUs     []int    `json:"gpus"`
	GPUUUIDs []string `json:"gpu_uuids"`
	// Env is what tfhive sets for the task. The launcher layers it over the
	// host's own env (hosts file env:), so these always win.
	Env      map[string]string `json:"env"`
	TFConfig string            `json:"tf_config,omitempty"`
	Argv     []string          `json:"argv"`
}

// MatrixHost is one row of the resource matrix.
type MatrixHost struct {
	Host    string `json:"host"`
	Address string `json:"address"`
	// Interface carries the host's cluster traffic (--nic), "" without
	// --nic, for hosts without a task, and when none could be told.
	Interface string      `json:"interface,omitempty"`
	Reachable bool        `json:"reachable"`
	Note      string      `json:"note,omitempty"`
	GPUs      []MatrixGPU `json:"gpus"`
}

// MatrixGPU is one cell of the resource matrix.
type MatrixGPU struct {
	Index  int      `json:"index"`
	UUID   string   `json:"uuid"`
	State  GPUState `json:"state"`
	Reason string   `json:"reason,omitempty"`
	Task   string   `json:"task,omitempty"` // the task holding it, "worker:0"
}

// Hosts lists the names of the hosts that run at least one task, in the
// order their first task appears.
func (p *Plan) Hosts() []string {
	var hs []string
	for _, t := range p.Tasks {
		if !slices.Contains(hs, t.Host) {
			hs = append(hs, t.Host)
		}
	}
	return hs
}

func taskID(role string, index int) string { return role + ":" + strconv.Itoa(index) }

// Make computes the plan. It is pure: the same inventory and request always
// give the same plan, which is what lets `plan` preview exactly what `run`
// will do (given the same probe results).
func Make(inv inventory.Inventory, req Request) (*Plan, error) {
	req.SetDefaults()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if len(inv.Hosts) == 0 {
		return nil, usageErr("give hosts with -H or a hosts file", "no hosts to plan on")
	}
	if err := checkExclusions(inv, req.Exclude); err != nil {
		return nil, err
	}
	if err := checkSameMachine(inv); err != nil {
		return nil, err
	}
	st := classify(inv, req.Availability)
	applyPolicy(inv, st, &req)
	applyReservations(inv, st, &req)
	applyQueue(inv, st, &req)
	migForRequest(inv, st, &req)
	capSlots(inv, st)
	shapeHosts(inv, st, req.RanksPerHost, req.GPUsPerWorker)
	ds := demands(&req)
	spots, ok := place(inv, st, ds, req.Strategy, req.GPUsPerWorker, req.GPUsPerPS)
	if !ok {
		return nil, notEnough(inv, st, &req, ds)
	}
	if req.Framework == FrameworkTorch {
		spots = ranksByHost(spots)
	}
	nics, err := chooseNICs(inv, spots, req.NIC)
	if err != nil {
		return nil, err
	}
	addrs, err := addresses(inv, ds, spots, nics)
	if err != nil {
		return nil, err
	}
	if req.Framework == FrameworkTorch {
		p, err := torchPlan(inv, &req, ds, spots, addrs, nics)
		if err != nil {
			return nil, err
		}
		p.Matrix = matrix(inv, st, p.Tasks, nics)
		p.Reservations = planReservations(inv, p)
		return p, withCode(p, inv, req.Code)
	}
	ports, err := assignPorts(inv, ds, spots, addrs, req.PortLo, req.PortHi)
	if err != nil {
		return nil, err
	}

	p := &Plan{Version: PlanVersion, RunID: req.RunID, Framework: planTensorFlow, Strategy: req.Strategy, NIC: req.NIC}
	for i, d := range ds {
		hostport := joinHostPort(addrs[i], ports[i])
		switch d.role {
		case RolePS:
			p.Cluster.PS = append(p.Cluster.PS, hostport)
		case RoleChief:
			p.Cluster.Chief = append(p.Cluster.Chief, hostport)
		case RoleWorker:
			p.Cluster.Worker = append(p.Cluster.Worker, hostport)
		case RoleEvaluator:
			p.Evaluator = hostport
		}
	}
	for i, d := range ds {
		h := &inv.Hosts[spots[i].host]
		t := Task{
			ID: d.id(), Role: d.role, Index: d.index, Host: h.Name,
			Address: joinHostPort(addrs[i], ports[i]), Port: ports[i],
			GPUs: spots[i].gpus, GPUUUIDs: uuids(h, spots[i].gpus),
			TFConfig: p.Cluster.TFConfig(d.role, d.index),
		}
		t.Env = map[string]string{
			"TF_CONFIG":            t.TFConfig,
			"CUDA_VISIBLE_DEVICES": visibleDevices(h, t.GPUs),
			// CUDA numbers GPUs fastest-first by default; nvidia-smi's
			// indices, which the plan uses, are PCI bus order.
			"CUDA_DEVICE_ORDER": "PCI_BUS_ID",
			"TFHIVE_RUN_ID":     req.RunID,
			"TFHIVE_TASK":       t.ID,
		}
		setNICEnv(t.Env, nics[spots[i].host])
		if t.Argv, err = argv(&req, p, &t, h); err != nil {
			return nil, err // unreachable after Validate, kept for safety
		}
		p.Tasks = append(p.Tasks, t)
	}
	p.Matrix = matrix(inv, st, p.Tasks, nics)
	p.Reservations = planReservations(inv, p)
	return p, withCode(p, inv, req.Code)
}

// joinHostPort brackets IPv6 literals, which TensorFlow's gRPC expects.
func joinHostPort(addr string, port int) string {
	if strings.Contains(addr, ":") {
		return "[" + addr + "]:" + strconv.Itoa(port)
	}
	return addr + ":" + strconv.Itoa(port)
}

func uuids(h *inventory.HostInventory, idx []int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		for _, g := range h.GPUs {
			if g.Index == i {
				out = append(out, g.UUID)
			}
		}
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// argv substitutes the placeholders for task t on host h and appends
// --tf-flags.
func argv(req *Request, p *Plan, t *Task, h *inventory.HostInventory) ([]string, error) {
	vals := map[string]string{
		"job_name":     t.Role,
		"task_index":   strconv.Itoa(t.Index),
		"ps_hosts":     strings.Join(p.Cluster.PS, ","),
		"worker_hosts": strings.Join(p.Cluster.Worker, ","),
		"chief_hosts":  strings.Join(p.Cluster.Chief, ","),
		"cluster_spec": p.Cluster.JSON(),
		"tf_config":    t.TFConfig,
		"run_id":       req.RunID,
		"host":         t.Host,
		"port":         strconv.Itoa(t.Port),
		"gpus":         visibleDevices(h, t.GPUs),
		"code_dir":     h.CodeDir,
	}
	return Substitute(req.Command, vals, req.TFFlags)
}

// Substitute fills the placeholders of every argument of command from vals
// (placeholder name → its text), and with tfFlags appends the TF1 flags
// --ps_hosts --worker_hosts --job_name --task_index from the same values.
// It is how plans fill a task's command, exported for the emitters of jobs
// for other launchers (launcher/emit), which fill the same placeholders with
// their own values: a Kubernetes service name, a shell variable.
func Substitute(command []string, vals map[string]string, tfFlags bool) ([]string, error) {
	out := make([]string, 0, len(command)+4)
	for _, a := range command {
		s, err := expand(a, func(name string) string { return vals[name] })
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if tfFlags {
		out = append(out,
			"--ps_hosts="+vals["ps_hosts"],
			"--worker_hosts="+vals["worker_hosts"],
			"--job_name="+vals["job_name"],
			"--task_index="+vals["task_index"])
	}
	return out, nil
}

// checkExclusions catches --exclude naming a host or GPU that does not
// exist: a typo there would silently leave the GPU the user meant in play.
// GPUs of hosts that could not list theirs cannot be checked.
func checkExclusions(inv inventory.Inventory, ex Exclusions) error {
	names := make([]string, len(inv.Hosts))
	for i, h := range inv.Hosts {
		names[i] = h.Name
	}
	if err := ex.Validate(names); err != nil {
		return err
	}
	for _, h := range inv.Hosts {
		if !h.Reachable() || h.DriverError != "" || h.NoNvidiaSMI {
			continue
		}
		have := make([]int, len(h.GPUs))
		for i, g := range h.GPUs {
			have[i] = g.Index
		}
		for _, i := range ex[h.Name] {
			if !slices.Contains(have, i) {
				return usageErr(fmt.Sprintf("%s has GPUs %s", h.Name, joinInts(have)),
					"--exclude %s:%d: %s has no GPU %d", h.Name, i, h.Name, i)
			}
		}
	}
	return nil
}

// matrix is the host × GPU view: every host, every GPU, who holds it. A
// host --nic chose an interface for shows that and its address.
func matrix(inv inventory.Inventory, st [][]GPUStatus, tasks []Task, nics map[int]nicChoice) []MatrixHost {
	type hostGPU struct {
		host string
		gpu  int
	}
	holder := map[hostGPU]string{} // → task id
	for _, t := range tasks {
		for _, g := range t.GPUs {
			holder[hostGPU{t.Host, g}] = t.ID
		}
	}
	out := make([]MatrixHost, len(inv.Hosts))
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		m := MatrixHost{Host: h.Name, Address: clusterAddress(h), Reachable: h.Reachable(), Note: hostNote(h), GPUs: make([]MatrixGPU, 0, len(st[i]))}
		if c, ok := nics[i]; ok {
			m.Address, m.Interface = c.addr, c.iface
		}
		for j, s := range st[i] {
			if leftFree(s) {
				// Free on the host; only this run does not take it.
				s.State = Free
			}
			m.GPUs = append(m.GPUs, MatrixGPU{
				Index: s.Index, UUID: h.GPUs[j].UUID, State: s.State, Reason: s.Reason,
				Task: holder[hostGPU{h.Name, s.Index}],
			})
		}
		out[i] = m
	}
	return out
}

// leftFree: a GPU that capSlots or shapeHosts took out of this run's
// reach (a hostfile's slots=N, --nproc-per-node's shape) is free on its
// host, not excluded: the matrix says free, the reason says why the plan
// leaves it.
func leftFree(s GPUStatus) bool {
	if s.State != Excluded {
		return false
	}
	for _, f := range []string{ReasonSlots, ReasonRanks, ReasonFewRanks} {
		if prefix, _, _ := strings.Cut(f, "%"); strings.HasPrefix(s.Reason, prefix) {
			return true
		}
	}
	return false
}

// hostNote says why a host offers no GPUs at all, "" if it has some.
func hostNote(h *inventory.HostInventory) string {
	switch {
	case !h.Reachable():
		return "unreachable: " + h.Err.Message
	case h.DriverError != "":
		return "no GPUs: " + h.DriverError
	case h.NoNvidiaSMI:
		return "no GPUs: no nvidia-smi"
	case len(h.GPUs) == 0:
		return "no GPUs"
	}
	return ""
}
