package supervisor_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/schedule"
)

// A start planned on an older probe (Task.Seeded) honours the hosts'
// queue: with the tickets that probe saw, it claims; once a run began to
// wait since, it says so (ClaimQueued) and ends as a claim taken (75),
// its GPU given back; a ticket parked since (a run that runs) is no waiter; a
// start on a probe of its own is not held back. Real tickets (hostops'
// ticket.sh) and the probe's reading of them, on this machine.
func TestSupervisorSeededStartMeetsNewTicket(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777|os.ModeSticky)
	t.Setenv("TFHIVE_CLAIMS_DIR", dir)
	ctx := context.Background()
	execs := map[string]remote.Executor{"local": remote.Local{}}
	ticket := func(run string, parked bool) *hostops.Tickets {
		req := schedule.Request{RunID: run, Workers: 1, GPUsPerWorker: 1, QueueSince: time.Now()}
		tk := hostops.HoldTickets(ctx, execs, req, 0, nil, parked)
		t.Cleanup(tk.Release)
		return tk
	}
	waiting := func() []int {
		f := probe.NewFleet([]inventory.Host{hosts.Local()}, probe.Options{ClaimsOnly: true})
		defer f.Close()
		h := f.Probe(ctx).Hosts[0]
		if h.Err != nil {
			t.Fatalf("probe: %v", h.Err)
		}
		var pids []int
		for _, tk := range h.Tickets {
			pids = append(pids, tk.PID)
		}
		return pids
	}
	gpu := []inventory.Claim{{Kind: "gpu", ID: 0, UUID: "GPU-a"}}
	heldGPU := func() bool {
		f := probe.NewFleet([]inventory.Host{hosts.Local()}, probe.Options{ClaimsOnly: true})
		defer f.Close()
		return len(f.Probe(ctx).Hosts[0].Claims) > 0
	}
	start := func(seeded bool, seen []int) (string, int) {
		t.Helper()
		tk := supervisor.Task{Argv: []string{"true"}, Claims: gpu, RunID: "trial-1", ID: "worker:0", HeartbeatTimeout: 10 * time.Second,
			Seeded: seeded, SeenTickets: seen}
		pr, pw := io.Pipe()
		var errb strings.Builder
		p, err := remote.Local{}.Start(ctx, supervisor.Command, pw, &errb)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		io.WriteString(p.Stdin(), supervisor.Input(tk))
		lines := bufio.NewScanner(pr)
		first := make(chan string, 1)
		go func() {
			lines.Scan()
			first <- lines.Text()
			io.WriteString(p.Stdin(), supervisor.CtlAbort)
			for lines.Scan() {
			}
		}()
		rc, _ := p.Wait()
		pw.Close()
		line := <-first
		if errb.Len() > 0 {
			t.Logf("stderr: %s", errb.String())
		}
		return line, rc
	}

	ticket("colleague-1", false)
	seen := waiting()
	if len(seen) != 1 {
		t.Fatalf("waiting tickets seen: %v, want the colleague's", seen)
	}
	if line, _ := start(true, seen); line != supervisor.ClaimOK {
		t.Fatalf("seeded start, no run queued since its probe: %q, want %q", line, supervisor.ClaimOK)
	}

	ticket("colleague-2", false)
	if line, rc := start(true, seen); line != supervisor.ClaimQueued || rc != supervisor.ExitClaimBusy {
		t.Errorf("seeded start after colleague-2 queued: line %q exit %d, want %q and %d", line, rc, supervisor.ClaimQueued, supervisor.ExitClaimBusy)
	}
	if held := heldGPU(); held {
		t.Error("the GPU is still claimed after the start was refused")
	}
	if line, _ := start(true, nil); line != supervisor.ClaimQueued {
		t.Errorf("seeded start that saw no ticket: %q, want %q", line, supervisor.ClaimQueued)
	}
	if line, _ := start(false, nil); line != supervisor.ClaimOK {
		t.Errorf("a start on a probe of its own: %q, want %q", line, supervisor.ClaimOK)
	}
	if line, _ := start(true, waiting()); line != supervisor.ClaimOK {
		t.Errorf("seeded start on a probe that saw both: %q, want %q", line, supervisor.ClaimOK)
	}

	// A run that runs, its ticket parked from its start: no waiter.
	ticket("running-1", true)
	if line, _ := start(true, seen[:1]); line != supervisor.ClaimQueued {
		t.Errorf("seeded start with colleague-2 still waiting: %q, want %q", line, supervisor.ClaimQueued)
	}
	both := waiting()
	if len(both) != 2 {
		t.Fatalf("waiting tickets with one parked: %v, want 2", both)
	}
	if line, _ := start(true, both); line != supervisor.ClaimOK {
		t.Errorf("seeded start after a parked ticket came: %q, want %q", line, supervisor.ClaimOK)
	}
}
