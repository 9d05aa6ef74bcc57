package view

import (
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// A run that came, went or changed is a change; its GPUs' live
// utilisation is not.
func TestRunsChanged(t *testing.T) {
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	yes := true
	run := func(state string, util float64) []RunOnHost {
		return []RunOnHost{{RunID: "r1", User: "alice", Host: "h1", Tasks: []string{"worker:0"}, GPUs: []int{0}, Ports: []int{2222},
			Since: since, State: state, Keeper: &yes, GPUUse: []inventory.GPUUse{{Util: util}}}}
	}
	for _, c := range []struct {
		was, now []RunOnHost
		changed  bool
	}{
		{run("running", 3), run("running", 97), false},
		{run("starting", 3), run("running", 3), true},
		{nil, run("running", 3), true},
		{run("running", 3), nil, true},
		{nil, nil, false},
	} {
		if got := RunsChanged(c.was, c.now); got != c.changed {
			t.Errorf("RunsChanged(%+v, %+v) = %v", c.was, c.now, got)
		}
	}
}
