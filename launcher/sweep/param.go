package sweep

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/record"
)

// Limits: a sweep is a few hundred trials at most in practice; these bound
// what a typo (or a generated --param) can ask of the hosts' queues.
const (
	MaxValues = 1000
	MaxTrials = 10000
)

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// reserved are environment names a parameter may not take: the task's own
// environment (what tfhive, the framework and the shell set) must not be
// replaced by a sweep's value.
var reserved = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "SHELL": true, "PWD": true, "IFS": true,
	"TF_CONFIG": true, "CUDA_VISIBLE_DEVICES": true,
	"MASTER_ADDR": true, "MASTER_PORT": true, "RANK": true, "WORLD_SIZE": true,
	"LOCAL_RANK": true, "LOCAL_WORLD_SIZE": true,
}

func reservedName(n string) bool {
	return reserved[n] || strings.HasPrefix(n, "TFHIVE_") || strings.HasPrefix(n, "LD_") ||
		strings.HasPrefix(n, "SLURM_")
}

// ParseParam reads one --param NAME=V1,V2,…: a name fit for an environment
// variable, then one or more distinct, non-empty values.
func ParseParam(s string) (record.SweepParam, error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok {
		return record.SweepParam{}, fmt.Errorf("--param %q: want NAME=V1,V2,…", s)
	}
	if !nameRE.MatchString(name) {
		return record.SweepParam{}, fmt.Errorf("--param %q: the name must be letters, digits and _ (not first a digit), as an environment variable's", s)
	}
	if reservedName(name) {
		return record.SweepParam{}, fmt.Errorf("--param %s: that name is the task's own environment; choose another", name)
	}
	values := strings.Split(list, ",")
	if len(values) > MaxValues {
		return record.SweepParam{}, fmt.Errorf("--param %s: %d values, at most %d", name, len(values), MaxValues)
	}
	seen := map[string]bool{}
	for _, v := range values {
		if v == "" {
			return record.SweepParam{}, fmt.Errorf("--param %s: an empty value (two commas, or one at an end)", name)
		}
		if strings.ContainsAny(v, "\x00\n\r") {
			return record.SweepParam{}, fmt.Errorf("--param %s: a value holds a newline or NUL", name)
		}
		if seen[v] {
			return record.SweepParam{}, fmt.Errorf("--param %s: value %q given twice", name, v)
		}
		seen[v] = true
	}
	return record.SweepParam{Name: name, Values: values}, nil
}

// MaxGrid bounds a grid --random picks from: its combinations are
// numbered in a uint64.
const MaxGrid = 1 << 62

// Validate checks the parameters together: at least one, each name once,
// and at most MaxTrials trials: the whole grid, or random (--random N,
// 0 for none) of a grid of at most MaxGrid combinations.
func Validate(params []record.SweepParam, random int) error {
	if len(params) == 0 {
		return fmt.Errorf("a sweep needs at least one --param NAME=V1,V2,…")
	}
	seen := map[string]bool{}
	for _, p := range params {
		if seen[p.Name] {
			return fmt.Errorf("--param %s given twice; list all its values in one --param", p.Name)
		}
		seen[p.Name] = true
	}
	n := gridSize(params)
	switch {
	case random == 0 && n > MaxTrials:
		return fmt.Errorf("the grid has %s combinations, at most %d; pick some with --random N", gridWords(n), MaxTrials)
	case random > 0 && n > MaxGrid:
		return fmt.Errorf("the grid has more than 2^62 combinations, even for --random")
	case random > MaxTrials && n > MaxTrials:
		return fmt.Errorf("--random %d: at most %d trials", random, MaxTrials)
	}
	return nil
}

func gridWords(n uint64) string {
	if n > MaxGrid {
		return "more than 2^62"
	}
	return strconv.FormatUint(n, 10)
}

// gridSize is the number of combinations, MaxGrid+1 for any more.
func gridSize(params []record.SweepParam) uint64 {
	n := uint64(1)
	for _, p := range params {
		v := uint64(len(p.Values))
		if v != 0 && n > MaxGrid/v {
			return MaxGrid + 1
		}
		n *= v
	}
	return n
}
