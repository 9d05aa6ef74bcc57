package schedule

import (
	"slices"

	"github.com/tfhive/tfhive/probe/inventory"
)

// demand is one task still to be placed.
type demand struct {
	role  string
	index int
	gpus  int
}

func (d demand) id() string { return taskID(d.role, d.index) }

// spot is where a task landed.
type spot struct {
	host int   // position in inv.Hosts
	gpus []int // GPU indices, ascending; empty for a CPU task
}

// demands lists the tasks in plan order: ps, chief, worker, evaluator.
func demands(r *Request) []demand {
	var ds []demand
	for i := range r.PS {
		ds = append(ds, demand{RolePS, i, r.GPUsPerPS})
	}
	if r.Chief {
		ds = append(ds, demand{RoleChief, 0, r.GPUsPerWorker})
	}
	for i := range r.Workers {
		ds = append(ds, demand{RoleWorker, i, r.GPUsPerWorker})
	}
	if r.Evaluator {
		ds = append(ds, demand{RoleEvaluator, 0, r.GPUsPerWorker})
	}
	return ds
}

// TaskIDs are the ids of the tasks r asks for, in plan order, known
// before any host is: --capture-from is checked against them.
func (r *Request) TaskIDs() []string {
	var ids []string
	for _, d := range demands(r) {
		ids = append(ids, d.id())
	}
	return ids
}

// Shape is the GPUs each task of r asks for, in plan order: what a
// waiting run's ticket says it needs.
func (r *Request) Shape() []int {
	var shape []int
	for _, d := range demands(r) {
		shape = append(shape, d.gpus)
	}
	return shape
}

// place puts every task on a host. The chief, workers and evaluator all have
// the same size, so dealing them greedily (round-robin or first-fit) never
// wastes room among themselves; the only way greed fails is around ps tasks
// of a different size. So the bigger group goes first, and if that fails the
// other order is tried. Both are deterministic, and this is enough for the
// shapes people ask for without turning a CLI into a bin-packing solver.
func place(inv inventory.Inventory, st [][]GPUStatus, ds []demand, strategy string, gpusPerWorker, gpusPerPS int) ([]spot, bool) {
	psFirst := gpusPerPS > gpusPerWorker
	for _, first := range []bool{psFirst, !psFirst} {
		p := newPlacer(inv, st)
		out := make([]spot, len(ds))
		var ok bool
		if first {
			ok = p.placePS(ds, out) && p.placeTraining(ds, out, strategy)
		} else {
			ok = p.placeTraining(ds, out, strategy) && p.placePS(ds, out)
		}
		if ok {
			return out, true
		}
	}
	return nil, false
}

type placer struct {
	reachable []int   // positions in inv.Hosts, input order
	free      [][]int // per host: free GPU indices, ascending, not yet taken
	ps        []int   // per host: ps tasks placed there
	// mig: per host, which of free are MIG instances, each only ever a
	// one-GPU task's (mig.go).
	mig []map[int]bool
}

func newPlacer(inv inventory.Inventory, st [][]GPUStatus) *placer {
	p := &placer{free: make([][]int, len(inv.Hosts)), ps: make([]int, len(inv.Hosts)), mig: make([]map[int]bool, len(inv.Hosts))}
	var reserving []int
	for i := range inv.Hosts {
		if !inv.Hosts[i].Reachable() {
			continue
		}
		p.reachable = append(p.reachable, i)
		for j, s := range st[i] {
			if s.State == Free {
				p.free[i] = append(p.free[i], s.Index)
				if inv.Hosts[i].GPUs[j].MIGInstance != nil {
					if p.mig[i] == nil {
						p.mig[i] = map[int]bool{}
					}
					p.mig[i][s.Index] = true
				}
			}
		}
		// Our own reservation's GPUs first (reservations.go): a run of
		// the reserver lands on what it reserved while it is free.
		mine := mineNow(&inv.Hosts[i])
		slices.SortFunc(p.free[i], func(a, b int) int {
			if mine[a] != mine[b] {
				if mine[a] {
					return -1
				}
				return 1
			}
			return a - b
		})
		if len(mine) > 0 {
			reserving = append(reserving, i)
		}
	}
	// And the hosts holding them first, the others in input order.
	if len(reserving) > 0 {
		rest := slices.DeleteFunc(slices.Clone(p.reachable), func(h int) bool { return slices.Contains(reserving, h) })
		p.reachable = append(slices.DeleteFunc(slices.Clone(p.reachable), func(h int) bool { return !slices.Contains(reserving, h) }), rest...)
	}
	return p
}

// usable is what of host h's free GPUs a task of n GPUs may have: all of
// them for one GPU, the whole GPUs (not MIG instances) for more.
func (p *placer) usable(h, n int) []int {
	if n <= 1 || len(p.mig[h]) == 0 {
		return p.free[h]
	}
	var whole []int
	for _, g := range p.free[h] {
		if !p.mig[h][g] {
			whole = append(whole, g)
		}
	}
	return whole
}

func (p *placer) fits(h, n int) bool { return len(p.usable(h, n)) >= n }

// take gives the lowest free indices: deterministic, and on most boards
// neighbouring indices share a PCIe switch or NVLink. (MIG instances are
// numbered after the whole GPUs, so a one-GPU task gets a whole GPU
// while there is one.)
func (p *placer) take(h, n int) spot {
	g := slices.Clone(p.usable(h, n)[:n])
	p.free[h] = slices.DeleteFunc(p.free[h], func(x int) bool { return slices.Contains(g, x) })
	if g == nil {
		g = []int{}
	}
	return spot{host: h, gpus: g}
}

// placeTraining deals the chief, workers and evaluator, in that order. With
// spread the next task goes to the next host (cyclically) that still has
// room; with pack to the first host that has. CPU tasks fit everywhere, so
// spread deals them round-robin over all reachable hosts and pack puts them
// all on the first.
func (p *placer) placeTraining(ds []demand, out []spot, strategy string) bool {
	n := len(p.reachable)
	next := 0 // spread: position in reachable to try first
	for i, d := range ds {
		if d.role == RolePS {
			continue
		}
		placed := false
		for k := range n {
			pos := k
			if strategy == StrategySpread {
				pos = (next + k) % n
			}
			if h := p.reachable[pos]; p.fits(h, d.gpus) {
				out[i] = p.take(h, d.gpus)
				next = (pos + 1) % n
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
	}
	return true
}

// placePS puts each ps task on the host with the fewest ps tasks so far that
// has room, ties going to input order: distinct hosts first, then
// round-robin, whatever the strategy, because a ps's cost is its network
// traffic. Sharing a host with workers is fine.
func (p *placer) placePS(ds []demand, out []spot) bool {
	for i, d := range ds {
		if d.role != RolePS {
			continue
		}
		best := -1
		for _, h := range p.reachable {
			if p.fits(h, d.gpus) && (best < 0 || p.ps[h] < p.ps[best]) {
				best = h
			}
		}
		if best < 0 {
			return false
		}
		out[i] = p.take(best, d.gpus)
		p.ps[best]++
	}
	return true
}
