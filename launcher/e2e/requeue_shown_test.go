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

// A requeued run keeps its place: low-1 runs, low-2 (as low) queues
// behind it, high-1 preempts low-1. Back in the queue, low-1 is ahead of
// low-2, which began to wait after low-1 first arrived (its ticket,
// parked while it ran, is held by the holder the host dated then), and
// it is low-1 that starts once high-1 ends. While low-1 ran, its parked
// ticket was no waiter.
func TestRequeueKeepsPlace(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	if err := f.Host("h1").SetPolicy("preempt_low: true\n"); err != nil {
		t.Fatal(err)
	}
	highGo, lowGo, low2Go := filepath.Join(f.Dir, "high-go"), filepath.Join(f.Dir, "low-go"), filepath.Join(f.Dir, "low2-go")
	low2Started := filepath.Join(f.Dir, "low2-started")
	wait := `while [ ! -e "$1" ]; do sleep 0.1; done`
	low := `if [ "${TFHIVE_RESUME-}" = 1 ]; then echo resumed; ` + wait + `; exit 0; fi; trap 'exit 9' TERM; echo ready; while :; do sleep 0.1; done`
	largs, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--priority", "low", "--wait", "2m", "--grace", "1s",
		"--name", "low-1", "--", "sh", "-c", low, "low", lowGo)
	lr := startTfhive(t, f, readStdout, largs...)
	if !lr.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready") }) {
		lr.Wait()
		t.Fatalf("low-1 did not start:\n%s%s", lr.read.String(), lr.other.String())
	}
	l2args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--priority", "low", "--wait", "2m",
		"--name", "low-2", "--", "sh", "-c", `touch "$2"; `+wait, "low2", low2Go, low2Started)
	l2 := startTfhive(t, f, readStderr, l2args...)
	if !l2.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: waiting") }) {
		l2.Wait()
		t.Fatalf("low-2 did not wait:\n%s%s", l2.read.String(), l2.other.String())
	}
	l2.discardRest()
	q := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "queue")...).stdout
	if !regexp.MustCompile(`(?m)^1 +low-2 `).MatchString(q) || strings.Contains(q, "low-1") {
		t.Errorf("queue while low-1 runs: want low-2 first and low-1 (running, its ticket parked) absent:\n%s", q)
	}

	hargs, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--priority", "high", "--wait", "1m",
		"--name", "high-1", "--", "sh", "-c", wait, "high", highGo)
	hr := startTfhive(t, f, readStdout, hargs...)
	waitFor(t, 30*time.Second, "queue to list low-1 requeued ahead of low-2", func() bool {
		q = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "queue")...).stdout
		return regexp.MustCompile(`(?m)^1 +low-1 .* requeued \(attempt 2\)`).MatchString(q) && regexp.MustCompile(`(?m)^2 +low-2 `).MatchString(q)
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
	if _, err := os.Stat(low2Started); err == nil {
		t.Errorf("low-2, queued after low-1 first arrived, started before low-1 resumed")
	}
	if err := os.WriteFile(lowGo, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lr.readAll()
	if err := lr.Wait(); err != nil {
		t.Fatalf("low-1: %v\n%s%s", err, lr.read.String(), lr.other.String())
	}
	waitFor(t, 60*time.Second, "low-2 to start after low-1", func() bool { _, err := os.Stat(low2Started); return err == nil })
	if err := os.WriteFile(low2Go, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l2.Wait(); err != nil {
		t.Fatalf("low-2: %v", err)
	}
}
