package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A --priority low --wait run of real TensorFlow (MWMS, Keras
// BackupAndRestore, the examples') is preempted by a high run in the
// middle of training: it goes back to the queue, starts again once the
// high run is done, as the same run, and resumes from its backup, not
// epoch 0; its summary lists both attempts. MWMS traps SIGTERM itself
// (its preemption notifier) and trains on: the grace is short, so that
// SIGKILL comes in the middle of an epoch.
func TestTFPreemptRequeueResume(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	venv := tfVenv(t)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	if err := f.Host("h1").SetPolicy("preempt_low: true\n"); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(f.Dir, "tf-hosts.yaml")
	if err := os.WriteFile(hosts, []byte("defaults:\n  setup: source "+filepath.Join(venv, "bin", "activate")+"\nhosts:\n  - address: h1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &tfBed{f: f, hosts: hosts}
	model := filepath.Join(f.Dir, "model")
	logDir := filepath.Join(t.TempDir(), "logs")
	low := startTfhive(t, f, readStdout, b.args("run", "--log-dir", logDir, "--grace", "1s", "--sync", examplesDir(),
		"--workers", "1", "--gpus-per-worker", "2", "--priority", "low", "--wait", "2m", "--name", "low-tf",
		"--", "python3", "multi_worker_mirrored.py", "--model_dir="+model, "--epochs=6", "--steps_per_epoch=2", "--epoch_seconds=1.5")...)
	if !low.readUntil(func(l string) bool {
		return strings.HasSuffix(l, "worker:0 epoch 1 end") || strings.Contains(l, "worker:0 epoch 1 end ")
	}) {
		low.Wait()
		t.Fatalf("the low run never ended epoch 1:\n%s%s", low.read.String(), low.other.String())
	}
	high := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "run", "--workers", "1", "--gpus-per-worker", "2", "--priority", "high", "--wait", "1m", "--name", "high-1", "--", "echo", "high-ran")...)
	wantCode(t, high, 0)
	low.readAll()
	if err := low.Wait(); err != nil {
		t.Fatalf("the low run: %v\n%s%s", err, low.read.String(), low.other.String())
	}
	out := low.read.String()
	wantContains(t, "the low run's output", out, "preempted by run high-1 of", "requeued at its place in the queue", "run low-tf succeeded",
		"restart: worker:0 on h1: attempt 1 preempted", "; requeued: preempted")
	log := taskLog(t, logDir, "worker:0")
	_, after, ok := strings.Cut(log, "worker:0 resumed from backup at epoch ")
	var at int
	if !ok || func() bool { _, err := fmt.Sscanf(after, "%d", &at); return err != nil }() || at < 2 {
		t.Fatalf("worker:0 did not resume from its backup (at epoch %d, want 2 or later):\n%s", at, log)
	}
	wantContains(t, "worker:0's log after the resume", after, fmt.Sprintf("worker:0 epoch %d start", at), "worker:0 epoch 5 end")
	s := summaryOf(t, logDir)
	if s.Result != "succeeded" || len(s.Tasks) != 1 || len(s.Tasks[0].Attempts) != 2 {
		t.Fatalf("summary: %s, %+v", s.Result, s.Tasks)
	}
	if a := s.Tasks[0].Attempts; a[0].Outcome != "preempted" || a[0].Restart != "requeued: preempted" || a[1].Attempt != 1 {
		t.Errorf("attempts: %+v", a)
	}
	wantContains(t, "events.csv", readFile(t, filepath.Join(logDir, "events.csv")), ",preempted,", ",requeued,", ",resumed,")
}
