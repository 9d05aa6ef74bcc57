package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// Every run keeps its console, console.log in its log dir, and `tfhive
// logs RUN` prints it: a foreground run's too (before, "run fg was not
// detached: give --task ROLE:INDEX"), and a -q run's task lines are in
// it, foreground or detached (before, a detached -q run recorded only
// tfhive's own lines): -q quietens the terminal, never the record.
func TestEveryRunKeepsItsConsole(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "k1")
	dir := t.TempDir()
	run := func(name string, flags ...string) result {
		args := append([]string{"run", "--name", name, "--workers", "1", "--gpus-per-worker", "0"}, flags...)
		return tfhive(t, f.Env(), dir, fleetArgs(f, append(args, "--", "sh", "-c", "echo hello-"+name)...)...)
	}
	logs := func(name string) string {
		args := []string{"logs"}
		if name != "" {
			args = append(args, name)
		}
		r := tfhive(t, f.Env(), dir, args...)
		wantCode(t, r, 0)
		return r.stdout
	}
	r := run("fg")
	wantCode(t, r, 0)
	wantContains(t, "logs fg", logs("fg"), "[worker:0 k1] hello-fg\n", "tfhive: run fg: 1 task on 1 host", "OUTCOME", "succeeded")
	// No id: the latest run's console, a foreground one's too.
	wantContains(t, "logs (the latest)", logs(""), "[worker:0 k1] hello-fg\n", "succeeded")

	r = run("quiet", "-q")
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "hello-quiet") {
		t.Errorf("-q printed the task's line:\n%s", r.stdout)
	}
	wantContains(t, "logs quiet", logs("quiet"), "[worker:0 k1] hello-quiet\n")

	// From another directory: where to look, and from the hosts.
	elsewhere := t.TempDir()
	r = tfhive(t, f.Env(), elsewhere, "logs", "fg")
	wantCode(t, r, 1)
	wantContains(t, "logs fg elsewhere", r.stderr, "tfhive: error: no run fg in tfhive-runs here\n",
		"tfhive: hint: a run's log dir is where it was started", "tfhive logs -H HOSTS fg")
	// attach and wait say the same (before, no hint at all).
	for _, cmd := range []string{"attach", "wait"} {
		r = tfhive(t, f.Env(), elsewhere, cmd, "fg")
		if r.code == 0 {
			t.Errorf("%s fg elsewhere: exit 0", cmd)
		}
		wantContains(t, cmd+" fg elsewhere", r.stderr, "no run fg in tfhive-runs here\n",
			"tfhive: hint: a run's log dir is where it was started", "tfhive logs -H HOSTS fg")
	}
	r = tfhive(t, f.Env(), elsewhere, "logs", "-H", "k1", "--ssh-config", f.SSHConfig, "fg")
	wantCode(t, r, 0)
	wantContains(t, "logs -H fg", r.stdout, "hello-fg")

	// A task's U+202E (right-to-left override, which would reorder what
	// follows on the screen) is shown inert on a terminal, as U+FFFD; its
	// log keeps the bytes.
	bidiLog := filepath.Join(t.TempDir(), "bidi")
	term := startOnTerminal(t, f, []string{"TERM=xterm"}, fleetArgs(f, "run", "--log-dir", bidiLog, "--workers", "1", "--gpus-per-worker", "0",
		"--", "printf", `txt.\342\200\256exe\n`)...)
	if code, out := term.end(t); code != 0 || !strings.Contains(out, "txt.\ufffdexe") || strings.Contains(out, "\u202e") {
		t.Errorf("a task's U+202E on the terminal (exit %d): %q, want it shown as U+FFFD", code, out)
	}
	if got := readFile(t, filepath.Join(bidiLog, "worker-0.log")); got != "txt.\u202eexe\n" {
		t.Errorf("the log %q, want the task's bytes", got)
	}

	r = run("dq", "-q", "--detach")
	wantCode(t, r, 0)
	wantCode(t, tfhive(t, f.Env(), dir, "wait", "dq"), 0)
	wantContains(t, "logs dq", logs("dq"), "[worker:0 k1] hello-dq\n")
}
