package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// queueOrder is `tfhive queue --json`'s run ids, in order.
func queueOrder(t *testing.T, f *sshtest.Fleet) []string {
	t.Helper()
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "queue", "--json")...)
	wantCode(t, r, 0)
	var doc struct {
		Queue []struct {
			Position int
			RunID    string `json:"run_id"`
			Priority string
			Why      string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("queue --json: %v\n%s", err, r.stdout)
	}
	var ids []string
	for i, e := range doc.Queue {
		if e.Position != i+1 || e.Why == "" {
			t.Errorf("queue entry %d: %+v", i, e)
		}
		ids = append(ids, e.RunID)
	}
	return ids
}

// Runs waiting for the GPUs a long run holds: each holds a ticket on the
// host; the queue lists a high run that came last first; a waiter killed
// with SIGKILL leaves the queue at once (its ticket was a lock its
// session held); when the GPUs free up, the high run starts.
func TestQueueTickets(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	done := filepath.Join(t.TempDir(), "done")
	hold := `echo ready; while [ ! -e ` + done + ` ]; do sleep 0.1; done`
	args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--name", "long", "--", "sh", "-c", hold)
	long := startTfhive(t, f, readStdout, args...)
	if !long.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready") }) {
		long.Wait()
		t.Fatalf("the long run did not start:\n%s%s", long.read.String(), long.other.String())
	}
	long.discardRest()

	waiter := func(name string, extra ...string) *running {
		args, _ := runArgs(t, f, append(append([]string{"--workers", "1", "--wait", "2m", "--name", name}, extra...), "--", "true")...)
		r := startTfhive(t, f, readStderr, args...)
		if !r.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: waiting") }) {
			r.Wait()
			t.Fatalf("%s did not wait:\n%s%s", name, r.read.String(), r.other.String())
		}
		return r
	}
	normal := waiter("normal-1")
	high := waiter("high-1", "--priority", "high")
	// Its first tickets are taken after its first probe: the line it
	// waits with comes once they are held.
	if got := queueOrder(t, f); strings.Join(got, " ") != "high-1 normal-1" {
		t.Fatalf("queue: %v, want high-1 normal-1", got)
	}
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "queue")...)
	wantContains(t, "queue", r.stdout, "POS", "high-1", "high", "needs 1 GPUs")

	normal.Process.Signal(syscall.SIGKILL)
	normal.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Join(queueOrder(t, f), " ") != "high-1" {
		if time.Now().After(deadline) {
			t.Fatalf("the killed waiter's ticket stayed: %v", queueOrder(t, f))
		}
	}
	high.discardRest()
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := high.Wait(); err != nil {
		t.Fatalf("the high run: %v\n%s", err, high.other.String())
	}
	wantContains(t, "high run's summary", high.other.String(), "run high-1 succeeded")
	if got := queueOrder(t, f); len(got) != 0 {
		t.Errorf("queue after: %v", got)
	}
}
