package e2e

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `ps` shows every host of a torch run whose ranks run on CPUs, and
// `kill` stops every rank: a rank other than rank 0 (which holds
// MASTER_PORT) held no GPU and no port, so no claim, no holder and no
// label, and ps, top (the same rows) and kill saw rank 0's host alone.
// Now such a rank holds the shared task claim.
func TestPsTorchEveryHost(t *testing.T) {
	f := runFleet(t, "t1", "t2")
	args, logDir := runArgs(t, f, "--detach", "--framework", "torch", "--workers", "2", "--gpus-per-worker", "0", "--", "sleep", "300")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	keeper := keeperOf(t, logDir)
	t.Cleanup(func() { syscall.Kill(keeper, syscall.SIGKILL) })
	waitForState(t, f, id, "running", true)
	var hosts []string
	for _, row := range psRows(t, f, id) {
		hosts = append(hosts, row.Host)
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"t1", "t2"}) {
		t.Errorf("ps's hosts of torch run %s: %v, want t1 and t2", id, hosts)
	}
	// The keeper gone, only kill can stop the ranks.
	syscall.Kill(keeper, syscall.SIGKILL)
	waitForState(t, f, id, "unattended", false)
	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", id)...)
	wantCode(t, k, 0)
	noLeftovers(t, f, 20*time.Second)
}
