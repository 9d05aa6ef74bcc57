package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run --detach returns once the tasks run, with the run id on stdout; the
// keeper carries the run to its end: wait gives its code, logs every line
// of a task, attach the console from the start.
func TestDetach(t *testing.T) {
	f := runFleet(t, "d1", "d2")
	flag := filepath.Join(t.TempDir(), "go-on")
	// The workers wait for the test: tfhive must have returned while they
	// still run.
	args, logDir := runArgs(t, f, "--detach", "--workers", "2", "--gpus-per-worker", "0",
		"--", "sh", "-c", `seq 1 500; while [ ! -e "$1" ]; do sleep 0.05; done; seq 501 1000`, "worker", flag)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	if id == "" || strings.Contains(id, "\n") {
		t.Fatalf("stdout %q, want the run id alone", r.stdout)
	}
	wantContains(t, "stderr", r.stderr, "tfhive: run "+id+" started, detached")
	if len(f.Host("d1").Leftovers())+len(f.Host("d2").Leftovers()) == 0 {
		t.Fatal("no task runs on the hosts after --detach returned")
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, id)
	wantCode(t, w, 0)

	l := tfhive(t, f.Env(), f.Dir, "logs", "--log-dir", logDir, "--task", "worker:1", id)
	wantCode(t, l, 0)
	lines := strings.Split(strings.TrimSuffix(l.stdout, "\n"), "\n")
	if len(lines) != 1000 || lines[0] != "1" || lines[999] != "1000" {
		t.Errorf("logs --task worker:1: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	a := tfhive(t, f.Env(), f.Dir, "attach", "--log-dir", logDir, id)
	wantCode(t, a, 0)
	wantContains(t, "attach", a.stdout, "tfhive: run "+id+": 2 tasks on", "[worker:0 ", "] 1000\n", "run "+id+" succeeded")
	noLeftovers(t, f, 10*time.Second)
}

// A detached run whose worker fails: wait exits with the worker's code,
// and says why in tfhive's voice.
func TestDetachWaitGivesTheRunsCode(t *testing.T) {
	f := runFleet(t, "d1")
	args, logDir := runArgs(t, f, "--detach", "--workers", "2", "--gpus-per-worker", "0",
		"--", "sh", "-c", `sleep 0.5; [ "$1" = 1 ] && exit 7; exit 0`, "worker", "{task_index}")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, id)
	wantCode(t, w, 7)
	wantContains(t, "wait's stderr", w.stderr, "tfhive: error: run "+id+" failed: worker:1 on d1 exited 7")
}

// A detached run that cannot start says why and exits as run would; no
// log dir is left behind.
func TestDetachThatCannotStart(t *testing.T) {
	f := runFleet(t, "d1")
	args, logDir := runArgs(t, f, "--detach", "--workers", "9", "--gpus-per-worker", "1", "--", "true")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "tfhive: error: ")
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("log dir %s left behind: %v", logDir, err)
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, "nosuchrun")
	wantCode(t, w, 1)
	wantContains(t, "stderr", w.stderr, "tfhive: error: no run nosuchrun in "+logDir)
}

// A detached run whose keeper is gone (killed outright) is stopped by its
// supervisors once --unattended has passed.
func TestDetachUnattended(t *testing.T) {
	f := runFleet(t, "u1")
	args, logDir := runArgs(t, f, "--detach", "--unattended", "5s", "--workers", "2", "--gpus-per-worker", "0",
		"--", "sleep", "300")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	pid := keeperOf(t, logDir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if len(f.Host("u1").Leftovers()) == 0 {
		t.Fatal("the tasks ended with their keeper: they were not kept")
	}
	// 5 s, counted from the keeper's last heartbeat, plus the read's own
	// rounding: 30 s leaves room for a loaded machine.
	noLeftovers(t, f, 30*time.Second)
}

// keeperOf finds the keeper of the run whose log dir is logDir, by its
// environment.
func keeperOf(t *testing.T, logDir string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(env), "\x00TFHIVE_KEEPER_LOG_DIR="+logDir+"\x00") {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil {
			return pid
		}
	}
	t.Fatalf("no keeper for %s", logDir)
	return 0
}
