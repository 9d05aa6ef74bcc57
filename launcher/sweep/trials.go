package sweep

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/tfhive/tfhive/launcher/record"
)

// Grid is every combination, the first parameter varying slowest (nested
// loops in the order the --param flags were given).
func Grid(params []record.SweepParam) []map[string]string {
	combos := []map[string]string{{}}
	for _, p := range params {
		next := make([]map[string]string, 0, len(combos)*len(p.Values))
		for _, c := range combos {
			for _, v := range p.Values {
				m := make(map[string]string, len(c)+1)
				for k, x := range c {
					m[k] = x
				}
				m[p.Name] = v
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos
}

// Random picks n distinct combinations of the grid with a generator seeded
// by seed, kept in grid order: the same seed picks the same trials, so a
// resumed sweep and its Slurm job array agree. n ≥ the grid's size is the
// whole grid.
func Random(params []record.SweepParam, n int, seed int64) []map[string]string {
	grid := Grid(params)
	if n >= len(grid) {
		return grid
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x7466686976650a)) // "tfhive\n"
	picked := r.Perm(len(grid))[:n]
	sort.Ints(picked)
	out := make([]map[string]string, n)
	for i, k := range picked {
		out[i] = grid[k]
	}
	return out
}

// TrialID is trial i's run id (0-based i): NAME-001, NAME-002, …
func TrialID(name string, i int) string { return fmt.Sprintf("%s-%03d", name, i+1) }

// Trials expands a sweep's record (Params, Random, Seed) into its trials,
// with their ids.
func Trials(s record.Sweep) []record.SweepTrial {
	combos := Grid(s.Params)
	if s.Random > 0 {
		combos = Random(s.Params, s.Random, s.Seed)
	}
	out := make([]record.SweepTrial, len(combos))
	for i, c := range combos {
		out[i] = record.SweepTrial{ID: TrialID(s.Name, i), Params: c}
	}
	return out
}
