package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// loadedFleet is two hosts whose every core a data loader keeps busy:
// CPU hogs beside each sshd (two each, as many as this machine's cores).
func loadedFleet(t *testing.T) *sshtest.Fleet {
	return sshtest.Start(t,
		sshtest.Profile{Name: "l1", GPU: "idle-2gpu.xml", AliveInterval: 1, CPUHogs: 2},
		sshtest.Profile{Name: "l2", GPU: "idle-2gpu.xml", AliveInterval: 1, CPUHogs: 2})
}

// On loaded hosts the queue keeps its order: the run first in line
// starts first when the GPUs free up, and the one behind waits; ps sees
// every task of a run and kill stops them all, nothing left on the
// hosts; no host is declared lost for being slow.
func TestLoadedHostsQueuePsKill(t *testing.T) {
	f := loadedFleet(t)
	b := newQueueBed(t, f)
	holder := b.start("holder", "", "--workers", "4", "--gpus-per-worker", "1")
	q1 := b.start("q1", "5m", "--workers", "4", "--gpus-per-worker", "1")
	q2 := b.start("q2", "5m", "--workers", "4", "--gpus-per-worker", "1")
	if got := queueOrder(t, f); !slices.Equal(got, []string{"q1", "q2"}) {
		t.Fatalf("queue: %v, want q1 q2", got)
	}
	b.finish(holder)
	b.waitStarted("q1")
	if slices.Contains(b.startedNow(), "q2") {
		t.Fatalf("q2 started beside or before q1: %v", b.startedNow())
	}
	b.finish(q1)
	b.waitStarted("q2")
	b.finish(q2)

	// ps sees all four tasks of a detached run; kill stops every one.
	args, _ := runArgs(t, f, "--detach", "--name", "lk", "--workers", "4", "--gpus-per-worker", "1", "--", "sleep", "300")
	wantCode(t, tfhive(t, f.Env(), f.Dir, args...), 0)
	ps := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...)
	wantCode(t, ps, 0)
	var doc struct{ Runs []view.RunOnHost }
	if err := json.Unmarshal([]byte(ps.stdout), &doc); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, ps.stdout)
	}
	var tasks []string
	for _, r := range doc.Runs {
		if r.RunID == "lk" {
			tasks = append(tasks, r.Tasks...)
		}
	}
	slices.Sort(tasks)
	if strings.Join(tasks, " ") != "worker:0 worker:1 worker:2 worker:3" {
		t.Errorf("ps sees tasks %v of lk, want its 4:\n%s", tasks, ps.stdout)
	}
	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", "lk")...)
	wantCode(t, k, 0)
	noLeftovers(t, f, 10*time.Second)
}
