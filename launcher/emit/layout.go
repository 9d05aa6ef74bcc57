package emit

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// A Slurm job's nodes are only known when it runs. So the job is planned
// by schedule.Make on made-up nodes whose names are markers, and the
// script puts the real node names where the markers are: placement,
// ports, TF_CONFIG, torch's environment and every placeholder are then
// exactly what tfhive computes, for nodes that are idle and alike.
const markerPrefix = "@tfhive-node-"

func marker(i int) string { return markerPrefix + strconv.Itoa(i) + "@" }

var markerRE = regexp.MustCompile(`^` + markerPrefix + `([0-9]+)@`)

// slurmLayout is the plan on made-up nodes and what the job asks of Slurm.
type slurmLayout struct {
	plan *schedule.Plan
	// node is the node of each task of plan.Tasks, numbered among the
	// nodes the plan uses (0 = the first of SLURM_JOB_NODELIST).
	node []int
	// position maps a made-up node (its marker's number) to that number.
	position map[int]int
	// nodes, tasksPerNode and gpusPerNode are what sbatch is asked for:
	// the nodes used, and the most tasks and GPUs any of them holds.
	nodes, tasksPerNode, gpusPerNode int
}

// planSlurm places the request on Nodes alike nodes of GPUsPerNode GPUs
// each: by default as many nodes as tasks and no limit of GPUs, so that
// --strategy alone decides how tasks share nodes.
func planSlurm(req schedule.Request, nodes, gpusPerNode int) (*slurmLayout, error) {
	tasks := req.PS + req.Workers
	if req.Chief {
		tasks++
	}
	if req.Evaluator {
		tasks++
	}
	asked := req.PS*req.GPUsPerPS + (tasks-req.PS)*req.GPUsPerWorker
	if nodes == 0 {
		nodes = tasks
	}
	if gpusPerNode == 0 {
		gpusPerNode = asked
	}
	inv := inventory.Inventory{Hosts: make([]inventory.HostInventory, nodes)}
	for i := range inv.Hosts {
		m := marker(i)
		h := inventory.HostInventory{
			Host: inventory.Host{Name: m, Address: m, ClusterAddress: m},
			Name: m, ClusterAddress: m, GPUs: []inventory.GPU{}, ListeningPorts: []int{},
		}
		for g := range gpusPerNode {
			h.GPUs = append(h.GPUs, inventory.GPU{Index: g, UUID: fmt.Sprintf("GPU-node%d-%d", i, g)})
		}
		inv.Hosts[i] = h
	}
	plan, err := schedule.Make(inv, req)
	if err != nil {
		var capacity *schedule.CapacityError
		if errors.As(err, &capacity) {
			// The request is fine; the nodes it was given are too few or
			// too small, which only flags can change: bad usage.
			return nil, usage("give more --nodes, or a bigger --gpus-per-node (0: no limit)",
				"%d tasks asking %d GPUs in all do not fit on %d nodes of %d GPUs and --port-range %d-%d",
				tasks, asked, nodes, gpusPerNode, req.PortLo, req.PortHi)
		}
		return nil, err
	}
	l := &slurmLayout{plan: plan, position: map[int]int{}}
	perNode := map[int]int{}
	gpus := map[int]int{}
	for _, t := range plan.Tasks {
		m := markerRE.FindStringSubmatch(t.Host)
		i, _ := strconv.Atoi(m[1])
		pos, ok := l.position[i]
		if !ok {
			pos = len(l.position)
			l.position[i] = pos
		}
		l.node = append(l.node, pos)
		perNode[pos]++
		gpus[pos] += len(t.GPUs)
		l.tasksPerNode = max(l.tasksPerNode, perNode[pos])
		l.gpusPerNode = max(l.gpusPerNode, gpus[pos])
	}
	l.nodes = len(l.position)
	return l, nil
}
