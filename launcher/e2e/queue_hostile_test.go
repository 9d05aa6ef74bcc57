package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// queueEntries is `tfhive queue --json` as the given user sees it.
type queueEntry struct {
	RunID string    `json:"run_id"`
	User  string    `json:"user"`
	Since time.Time `json:"since"`
}

func queueEntries(t *testing.T, f *sshtest.Fleet) []queueEntry {
	t.Helper()
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "queue", "--json")...)
	wantCode(t, r, 0)
	var doc struct{ Queue []queueEntry }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("queue --json: %v\n%s", err, r.stdout)
	}
	return doc.Queue
}

// A colleague holds, by hand, a ticket whose label says it waits since
// 1970 (SINCE 0), asking both GPUs of the host: the queue dates it by its
// holder, as the kernel does, and lists it behind the run that was
// waiting before it; when the GPUs free up, that run starts, the forged
// ticket still held.
func TestQueueForgedSince(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	p := &preemptHost{f: f, low: sshtest.AddUser(t, "alice"), high: sshtest.AddUser(t, "mallory")}
	alice, mallory := p.low, p.high
	long := startTfhive(t, f, readStdout, p.runAs(t, alice, "--workers", "1", "--gpus-per-worker", "2", "--name", "long",
		"--", "sh", "-c", "echo ready; exec sleep 300")...)
	if !long.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready") }) {
		long.Wait()
		t.Fatalf("the long run did not start:\n%s%s", long.read.String(), long.other.String())
	}
	long.discardRest()

	w := startTfhive(t, f, readStderr, p.runAs(t, alice, "--workers", "1", "--gpus-per-worker", "2", "--wait", "1m",
		"--name", "w", "--", "echo", "w-ran")...)
	if !w.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: waiting") }) {
		w.Wait()
		t.Fatalf("w did not wait:\n%s%s", w.read.String(), w.other.String())
	}
	w.discardRest()
	before := time.Now()

	dir := f.Host("h1").ClaimsPath()
	background(t, f.Host("h1"), mallory, "exec flock -n -o "+dir+"/tfhive-ticket.1.0.forged.lock bash --norc -c 'echo ready; exec sleep 300' tfhive-ticket "+dir+" 1.0.forged forged normal 0 2")

	q := queueEntries(t, f)
	if len(q) != 2 || q[0].RunID != "w" || q[1].RunID != "forged" || q[1].User != mallory.Name {
		t.Fatalf("queue: %+v, want w, then mallory's forged", q)
	}
	if q[1].Since.Before(before.Add(-2*time.Second)) || q[1].Since.After(time.Now()) {
		t.Errorf("the forged ticket waits since %v, want when its holder started (after %v)", q[1].Since, before)
	}

	long.Process.Signal(syscall.SIGINT)
	long.Wait()
	if err := w.Wait(); err != nil {
		t.Fatalf("w: %v\n%s", err, w.other.String())
	}
	wantContains(t, "w's output", w.other.String(), "w-ran", "run w succeeded")
}
