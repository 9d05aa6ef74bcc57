package probe

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// parseAncestors reads the probe's "a PID PARENT GRANDPARENT ..." lines
// (scripts/probe.sh, in the ps section): each GPU process's chain of
// parents as /proc said it. A process /proc could not read has an empty
// chain: nothing is known of it.
func parseAncestors(out []byte) map[int][]int {
	anc := map[int][]int{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "a" {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid <= 0 {
			continue
		}
		var chain []int
		for _, s := range f[2:] {
			n, err := strconv.Atoi(s)
			if err != nil {
				chain = nil
				break
			}
			chain = append(chain, n)
		}
		anc[pid] = chain
	}
	return anc
}

// markIntruders flags each process on a GPU a tfhive run holds (a held
// claim whose holder's label names a run) that does not descend from the
// claim's holder: the kernel's lock names the holder, /proc the process's
// parents, so nothing a file says is taken for it. A process whose
// parents are unknown (gone, or hidden) is not flagged.
//
// On a GPU that a reservation holds now (reserved: by physical index; a
// MIG instance is its parent's) and that no tfhive run holds, every
// process is one started outside tfhive, and flagged too.
func markIntruders(gpus []inventory.GPU, claims []inventory.Claim, anc map[int][]int, reserved func(int) bool) {
	for i := range gpus {
		g := &gpus[i]
		var holders []int
		for _, c := range claims {
			if c.Kind == "gpu" && c.ID == g.Index && c.Blocked == "" && c.RunID != "" && c.PID > 0 {
				holders = append(holders, c.PID)
			}
		}
		if len(holders) == 0 {
			phys := g.Index
			if g.MIGInstance != nil {
				phys = g.MIGInstance.Parent
			}
			if reserved != nil && reserved(phys) {
				for j := range g.Processes {
					g.Processes[j].Intruder = true
				}
			}
			continue
		}
		for j := range g.Processes {
			p := &g.Processes[j]
			chain := anc[p.PID]
			if len(chain) == 0 || slices.Contains(holders, p.PID) {
				continue
			}
			if !slices.ContainsFunc(chain, func(a int) bool { return slices.Contains(holders, a) }) {
				p.Intruder = true
			}
		}
	}
}
