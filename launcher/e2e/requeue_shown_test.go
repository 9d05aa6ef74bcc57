package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A low run that a high run preempts goes back to the queue, and the
// hosts say so: `tfhive queue` lists it "requeued (attempt 2)" while the
// high run holds its GPUs, and once it started again `tfhive ps` says
// "resumed (attempt 2)" on its row, from its ticket's and its holders'
// labels.
func TestPreemptRequeueShown(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	if err := f.Host("h1").SetPolicy("preempt_low: true\n"); err != nil {
		t.Fatal(err)
	}
	highGo, lowGo := filepath.Join(f.Dir, "high-go"), filepath.Join(f.Dir, "low-go")
	wait := `while [ ! -e "$1" ]; do sleep 0.1; done`
	low := `if [ "${TFHIVE_RESUME-}" = 1 ]; then echo resumed; ` + wait + `; exit 0; fi; trap 'exit 9' TERM; echo ready; while :; do sleep 0.1; done`
	largs, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--priority", "low", "--wait", "2m", "--grace", "1s",
		"--name", "low-1", "--", "sh", "-c", low, "low", lowGo)
	lr := startTfhive(t, f, readStdout, largs...)
	if !lr.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready") }) {
		lr.Wait()
		t.Fatalf("low-1 did not start:\n%s%s", lr.read.String(), lr.other.String())
	}
	hargs, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--priority", "high", "--wait", "1m",
		"--name", "high-1", "--", "sh", "-c", wait, "high", highGo)
	hr := startTfhive(t, f, readStdout, hargs...)

	var q string
	waitFor(t, 30*time.Second, "queue to list low-1 as requeued", func() bool {
		q = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "queue")...).stdout
		return regexp.MustCompile(`(?m)^1 +low-1 .* requeued \(attempt 2\)`).MatchString(q)
	})
	if err := os.WriteFile(highGo, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hr.readAll()
	if err := hr.Wait(); err != nil {
		t.Fatalf("high-1: %v\n%s%s", err, hr.read.String(), hr.other.String())
	}
	if !lr.readUntil(func(l string) bool { return strings.HasSuffix(l, "resumed") }) {
		lr.Wait()
		t.Fatalf("low-1 did not resume:\n%s%s", lr.read.String(), lr.other.String())
	}
	var ps string
	waitFor(t, 10*time.Second, "ps to say low-1 resumed", func() bool {
		ps = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps")...).stdout
		return regexp.MustCompile(`(?m)^low-1 .*, resumed \(attempt 2\)`).MatchString(ps)
	})
	if strings.Contains(q, "high-1") && regexp.MustCompile(`(?m)^\d+ +high-1 .*requeued`).MatchString(q) {
		t.Errorf("queue says high-1, never preempted, was requeued:\n%s", q)
	}
	if err := os.WriteFile(lowGo, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lr.readAll()
	if err := lr.Wait(); err != nil {
		t.Fatalf("low-1: %v\n%s%s", err, lr.read.String(), lr.other.String())
	}
	wantContains(t, "low-1's output", lr.read.String(), "was preempted by run high-1 of", "requeued at its place in the queue", "run low-1 succeeded")
}
