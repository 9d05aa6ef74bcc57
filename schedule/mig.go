package schedule

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// MIG: a GPU in MIG mode is given to tasks only as its MIG instances,
// which the probe lists after the physical GPUs (inventory.MIGInstance),
// each with an index of its own, its own memory, processes and claim
// (named by its MIG UUID). CUDA shows a process one MIG instance at most,
// whatever CUDA_VISIBLE_DEVICES lists, and instances are not combined
// across GPUs, so an instance is one task's one GPU: a task of
// --gpus-per-worker 2 gets whole GPUs, never instances.

// Reasons about MIG, for GPUs and instances taken out.
const (
	// ReasonMIGNoInstances: MIG mode is on but nobody has made instances.
	ReasonMIGNoInstances = "MIG enabled, no MIG instances made on it"
	// ReasonMIGSize is a format: the GPUs per task asked.
	ReasonMIGSize = "a MIG instance is one task's only GPU; tasks here ask for %d"
	// ReasonMIGTorch: torch ranks of a host share one CUDA_VISIBLE_DEVICES
	// and pick by LOCAL_RANK, which a process seeing one MIG instance
	// cannot.
	ReasonMIGTorch = "MIG instances are not given to torch ranks (each rank would see only one)"
)

// migParentReason says why a GPU in MIG mode is not given whole, naming
// the entries of its instances.
func migParentReason(h *inventory.HostInventory, g *inventory.GPU) string {
	var ids []string
	for _, o := range h.GPUs {
		if o.MIGInstance != nil && o.MIGInstance.Parent == g.Index {
			ids = append(ids, strconv.Itoa(o.Index))
		}
	}
	if len(ids) == 0 {
		return ReasonMIGNoInstances
	}
	return fmt.Sprintf("%s: used as its MIG instances %s", ReasonMIG, strings.Join(ids, ","))
}

// migForRequest takes the free MIG instances out of a plan that cannot
// use them: a torch plan, or one whose every GPU task asks for more than
// one GPU. A plan with tasks of one GPU beside bigger ones keeps them
// free; the placer gives them to the one-GPU tasks only (placer.fits).
func migForRequest(inv inventory.Inventory, st [][]GPUStatus, req *Request) {
	reason := ""
	switch one, most := oneGPUTasks(req); {
	case req.Framework == FrameworkTorch:
		reason = ReasonMIGTorch
	case !one && most > 1:
		reason = fmt.Sprintf(ReasonMIGSize, most)
	default:
		return
	}
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		for j := range st[i] {
			if st[i][j].State == Free && h.GPUs[j].MIGInstance != nil {
				st[i][j] = GPUStatus{Index: st[i][j].Index, State: Excluded, Reason: reason}
			}
		}
	}
}

// oneGPUTasks says whether some task of req asks for exactly one GPU, and
// the most any asks for.
func oneGPUTasks(req *Request) (one bool, most int) {
	for _, d := range demands(req) {
		one = one || d.gpus == 1
		most = max(most, d.gpus)
	}
	return one, most
}

// visibleDevices is a task's CUDA_VISIBLE_DEVICES (and {gpus}): its GPUs'
// indices, or its MIG instance's UUID, which is how CUDA is given one (the
// index is tfhive's, not CUDA's).
func visibleDevices(h *inventory.HostInventory, gpus []int) string {
	out := make([]string, len(gpus))
	for k, i := range gpus {
		out[k] = strconv.Itoa(i)
		for _, g := range h.GPUs {
			if g.Index == i && g.MIGInstance != nil {
				out[k] = g.UUID
			}
		}
	}
	return strings.Join(out, ",")
}
