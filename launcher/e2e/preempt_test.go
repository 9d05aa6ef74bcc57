package e2e

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A --priority high run waiting for GPUs that a low run holds, on a host
// whose policy allows preempt_low, preempts it: the low run's own
// supervisor sees the request, its task gets SIGTERM (it says so), the
// low run ends preempted with exit 5 naming the high run, and the high
// run starts on the freed GPUs. A normal run is never preempted.
func TestPreemptLow(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	if err := f.Host("h1").SetPolicy("preempt_low: true\n"); err != nil {
		t.Fatal(err)
	}
	holder := func(name, prio string) *running {
		task := `trap 'echo got-term; exit 9' TERM; echo ready; while :; do sleep 0.1; done`
		args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--priority", prio, "--name", name, "--", "sh", "-c", task)
		r := startTfhive(t, f, readStdout, args...)
		if !r.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready") }) {
			r.Wait()
			t.Fatalf("%s did not start:\n%s%s", name, r.read.String(), r.other.String())
		}
		return r
	}
	low := holder("low-1", "low")
	args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--wait", "2m", "--priority", "high", "--name", "high-1", "--", "echo", "high-ran")
	high := startTfhive(t, f, readStdout, args...)
	low.readAll()
	err := low.Wait()
	if code := low.ProcessState.ExitCode(); code != 5 {
		t.Fatalf("low run: %v (exit %d), want exit 5\n%s%s", err, code, low.read.String(), low.other.String())
	}
	wantContains(t, "low run's output", low.read.String(), "got-term", "run low-1 preempted", "preempted by run high-1 of", "(exit 5)")
	high.readAll()
	if err := high.Wait(); err != nil {
		t.Fatalf("high run: %v\n%s%s", err, high.read.String(), high.other.String())
	}
	wantContains(t, "high run's output", high.read.String(), "high-ran", "run high-1 succeeded")
	wantContains(t, "high run's stderr", high.other.String(), "tfhive: preempting run low-1 of ")

	// A normal run is not preempted: the high run waits, and --wait ends.
	normal := holder("normal-1", "normal")
	args, _ = runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--wait", "3s", "--priority", "high", "--", "true")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	if strings.Contains(r.stderr, "preempting") {
		t.Errorf("a normal run was preempted:\n%s", r.stderr)
	}
	normal.Process.Kill()
	normal.Wait()
}

// A low run's task restarted (--restarts) is watched for a request to
// preempt it as its first attempt was: the watch follows the attempt
// under way, not the first attempt's pid (once that one ended, a high
// run's request stopped nothing there, and the high run waited on).
func TestPreemptLowRestarted(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	if err := f.Host("h1").SetPolicy("preempt_low: true\n"); err != nil {
		t.Fatal(err)
	}
	// The first attempt fails at once; the second holds the GPUs.
	task := `[ "$TFHIVE_ATTEMPT" -gt 0 ] || exit 3; trap 'echo got-term; exit 9' TERM; echo "ready $TFHIVE_ATTEMPT"; while :; do sleep 0.1; done`
	args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--priority", "low", "--name", "low-r",
		"--restarts", "1", "--restart-backoff", "0s", "--", "sh", "-c", task)
	low := startTfhive(t, f, readStdout, args...)
	if !low.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready 1") }) {
		low.Wait()
		t.Fatalf("the low run's second attempt did not start:\n%s%s", low.read.String(), low.other.String())
	}
	args, _ = runArgs(t, f, "--workers", "1", "--gpus-per-worker", "2", "--wait", "30s", "--priority", "high", "--name", "high-r", "--", "echo", "high-ran")
	r := tfhive(t, f.Env(), f.Dir, args...)
	if r.code != 0 {
		low.Process.Kill() // not preempted: it would hold the GPUs on
	}
	low.readAll()
	err := low.Wait()
	if code := low.ProcessState.ExitCode(); code != 5 {
		t.Errorf("low run: %v (exit %d), want exit 5\n%s%s", err, code, low.read.String(), low.other.String())
	}
	wantContains(t, "low run's output", low.read.String(), "got-term", "run low-r preempted", "preempted by run high-r of")
	wantCode(t, r, 0)
	wantContains(t, "high run's output", r.stdout, "high-ran")
}
