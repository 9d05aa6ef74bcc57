package schedule

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/tfhive/tfhive/probe/inventory"
)

// A torch plan gives each task what torchrun gives a script, so that a
// script written for `torchrun` runs unchanged:
//
//	MASTER_ADDR       rank 0's cluster address (no brackets for IPv6)
//	MASTER_PORT       a port of --port-range that nothing listens on at MASTER_ADDR
//	WORLD_SIZE        the number of ranks: the chief (if any) and the workers
//	RANK              0 … WORLD_SIZE-1, in plan order: the chief is rank 0
//	LOCAL_RANK        the rank's position among the ranks on its host
//	LOCAL_WORLD_SIZE  the number of ranks on its host
//	GROUP_RANK        its host's position among the hosts holding ranks (torchrun's node rank)
//
// Ranks are numbered host by host, as torchrun numbers them: the ranks on
// one host are consecutive, so RANK = (ranks on earlier hosts) + LOCAL_RANK.
// The strategy still decides how many ranks each host gets; the numbering
// only reorders which worker lands where, which costs nothing because every
// rank asks for the same GPUs.
//
// Tasks get no port of their own, as under torchrun: rank 0 serves the
// rendezvous store on MASTER_PORT, and the collective backends (gloo, NCCL)
// pick their own ports. MASTER_PORT is the lowest port of --port-range that
// no host on rank 0's address listens on.
//
// CUDA_VISIBLE_DEVICES is, for every rank on a host, the GPUs of all the
// host's ranks in LOCAL_RANK order: rank LOCAL_RANK's own GPUs are CUDA
// devices LOCAL_RANK×N … LOCAL_RANK×N+N-1 (N = --gpus-per-worker), so with
// one GPU per rank the usual torch.cuda.set_device(LOCAL_RANK) picks the
// rank's own GPU, exactly as under torchrun on a node given those GPUs.
// (Per-rank isolation, as TensorFlow tasks get, would make every
// cuda:LOCAL_RANK past 0 an invalid device.) CPU ranks see no GPU.
//
// There is no TF_CONFIG: a stray one would confuse TensorFlow code running
// in the same environment.

// ranksByHost reorders the ranks' spots so that the ranks on one host are
// consecutive, hosts in the order of their first rank. Stable, so rank 0
// (the chief when asked for) keeps its spot and each host's ranks keep
// ascending GPUs.
func ranksByHost(spots []spot) []spot {
	group := map[int]int{}
	for _, s := range spots {
		if _, ok := group[s.host]; !ok {
			group[s.host] = len(group)
		}
	}
	out := slices.Clone(spots)
	slices.SortStableFunc(out, func(a, b spot) int { return cmp.Compare(group[a.host], group[b.host]) })
	return out
}

// torchPlan builds the tasks of a torch plan from the placed ranks; ds and
// spots are in rank order.
func torchPlan(inv inventory.Inventory, req *Request, ds []demand, spots []spot, addrs []string, nics map[int]nicChoice) (*Plan, error) {
	masterAddr := addrs[0]
	space := portSpaces(inv, spots, addrs, req.PortLo)[masterAddr]
	port := space.take(req.PortHi)
	if port == 0 {
		return nil, &CapacityError{
			Msg: fmt.Sprintf("no free port for MASTER_PORT on %s: every port of --port-range %d-%d is in use: %s",
				masterAddr, req.PortLo, req.PortHi, space.usedWords(req.PortLo, req.PortHi)),
			Fix:   "widen --port-range, or choose a range nothing listens on",
			Lines: space.lines(masterAddr, req.PortLo, req.PortHi),
		}
	}
	p := &Plan{Version: PlanVersion, RunID: req.RunID, Framework: FrameworkTorch, Strategy: req.Strategy,
		Master: joinHostPort(masterAddr, port), NIC: req.NIC}

	group := map[int]int{}     // host position → GROUP_RANK
	count := map[int]int{}     // host position → LOCAL_WORLD_SIZE
	devices := map[int][]int{} // host position → its ranks' GPUs, in LOCAL_RANK order
	local := make([]int, len(spots))
	for i, s := range spots {
		if _, ok := group[s.host]; !ok {
			group[s.host] = len(group)
		}
		local[i] = count[s.host]
		count[s.host]++
		devices[s.host] = append(devices[s.host], s.gpus...)
	}
	world := strconv.Itoa(len(ds))
	for rank, d := range ds {
		s := spots[rank]
		h := &inv.Hosts[s.host]
		t := Task{
			ID: d.id(), Role: d.role, Index: d.index, Host: h.Name, Address: addrs[rank],
			GPUs: s.gpus, GPUUUIDs: uuids(h, s.gpus),
		}
		t.Env = map[string]string{
			"MASTER_ADDR":          masterAddr,
			"MASTER_PORT":          strconv.Itoa(port),
			"WORLD_SIZE":           world,
			"RANK":                 strconv.Itoa(rank),
			"LOCAL_RANK":           strconv.Itoa(local[rank]),
			"LOCAL_WORLD_SIZE":     strconv.Itoa(count[s.host]),
			"GROUP_RANK":           strconv.Itoa(group[s.host]),
			"CUDA_VISIBLE_DEVICES": joinInts(devices[s.host]),
			"CUDA_DEVICE_ORDER":    "PCI_BUS_ID",
			"TFHIVE_RUN_ID":        req.RunID,
			"TFHIVE_TASK":          t.ID,
		}
		setNICEnv(t.Env, nics[s.host])
		var err error
		if t.Argv, err = Substitute(req.Command, map[string]string{
			"task_index":  strconv.Itoa(t.Index),
			"run_id":      req.RunID,
			"host":        t.Host,
			"gpus":        joinInts(t.GPUs),
			"rank":        t.Env["RANK"],
			"world_size":  world,
			"master_addr": masterAddr,
			"master_port": t.Env["MASTER_PORT"],
			"code_dir":    h.CodeDir,
		}, false); err != nil {
			return nil, err // unreachable after Validate, kept for safety
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p, nil
}
