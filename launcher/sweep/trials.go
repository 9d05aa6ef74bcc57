package sweep

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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
//
// A grid of more than MaxTrials combinations (Validate bounds it to
// MaxGrid) is never made: n numbers of combinations are drawn (Floyd's
// sampling) and each made alone.
func Random(params []record.SweepParam, n int, seed int64) []map[string]string {
	r := rand.New(rand.NewPCG(uint64(seed), 0x7466686976650a)) // "tfhive\n"
	if size := gridSize(params); size > MaxTrials {
		if n <= 0 || n > MaxTrials || size > MaxGrid {
			return nil // what Validate refuses
		}
		picked := make(map[uint64]bool, n)
		for j := size - uint64(n); j < size; j++ {
			k := r.Uint64N(j + 1)
			if picked[k] {
				k = j
			}
			picked[k] = true
		}
		ks := slices.Sorted(maps.Keys(picked))
		out := make([]map[string]string, len(ks))
		for i, k := range ks {
			out[i] = combination(params, k)
		}
		return out
	}
	grid := Grid(params)
	if n >= len(grid) {
		return grid
	}
	picked := r.Perm(len(grid))[:n]
	sort.Ints(picked)
	out := make([]map[string]string, n)
	for i, k := range picked {
		out[i] = grid[k]
	}
	return out
}

// combination is the grid's k-th combination, in Grid's order (the first
// parameter varying slowest).
func combination(params []record.SweepParam, k uint64) map[string]string {
	m := make(map[string]string, len(params))
	for i := len(params) - 1; i >= 0; i-- {
		v := uint64(len(params[i].Values))
		m[params[i].Name] = params[i].Values[k%v]
		k /= v
	}
	return m
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
