package slurmtest

import (
	"strings"
	"testing"
)

// TestCluster: two nodes run a job step each, and each resolves the
// other's name as a job on a real cluster would.
func TestCluster(t *testing.T) {
	c := Start(t, 2, 2, 0)
	j := c.Run("#!/bin/sh\nsrun --nodes=2 --ntasks=2 sh -c 'echo \"$SLURMD_NODENAME $(getent hosts node2)\"'\n", nil, "--nodes=2")
	if j.State != "COMPLETED" || j.ExitCode != 0 || j.Sacct != "COMPLETED 0:0" {
		t.Fatalf("job %s: state %s, exit %d, sacct %q\n%s", j.ID, j.State, j.ExitCode, j.Sacct, j.Output)
	}
	for _, want := range []string{"node1 127.0.3.2", "node2 127.0.3.2"} {
		if !strings.Contains(j.Output, want) {
			t.Errorf("no %q in the job's output:\n%s", want, j.Output)
		}
	}
	j = c.Run("#!/bin/sh\nexit 3\n", nil)
	if j.State != "FAILED" || j.ExitCode != 3 || j.Sacct != "FAILED 3:0" {
		t.Errorf("job %s: state %s, exit %d, sacct %q", j.ID, j.State, j.ExitCode, j.Sacct)
	}
}
