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
	t.Parallel() // beside others, on a fleet of its own (testing.md)
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
	// Its reader gone (`| head`), attach ends quietly, and -f logs too;
	// the run, never theirs to stop, goes on (wait's 0 below).
	for _, args := range [][]string{{"attach", "--log-dir", logDir, id}, {"logs", "-f", "--log-dir", logDir, id}} {
		if code, stderr := tfhiveToClosedPipe(t, f.Env(), f.Dir, args...); code != 141 || stderr != "" {
			t.Errorf("%s to a closed pipe: exit %d, want 141; stderr (want none):\n%s", args[0], code, stderr)
		}
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
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "d1")
	args, logDir := runArgs(t, f, "--detach", "--workers", "2", "--gpus-per-worker", "0",
		"--", "sh", "-c", `sleep 0.5; [ "$1" = 1 ] && exit 9; exit 0`, "worker", "{task_index}")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, id)
	wantCode(t, w, 9)
	wantContains(t, "wait's stderr", w.stderr, "tfhive: error: run "+id+" failed: worker:1 on d1 exited 9")
}

// A detached run that cannot start says why and exits as run would; no
// log dir is left behind.
func TestDetachThatCannotStart(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
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
	t.Parallel() // beside others, on a fleet of its own (testing.md)
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

// A detached run whose keeper is gone (killed outright) or stops
// answering (its laptop asleep: SIGSTOP) is adopted from a second
// "machine" (another HOME and log dir) by tfhive attach -H: the adopter
// follows every task from its first line, carries the run to its end (the
// parameter server stopped once the workers are done) and exits with its
// code, as does wait there. The sleeping keeper, woken, finds itself
// replaced and steps down, stopping nothing.
func TestDetachAdopted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			testAdopted(t, sig)
		})
	}
}

func testAdopted(t *testing.T, sig syscall.Signal) {
	f := runFleet(t, "a1", "a2")
	flag := filepath.Join(t.TempDir(), "train")
	script := `if [ "$1" = ps ]; then echo serving; exec sleep 300; fi
seq 1 100; while [ ! -e "$2" ]; do sleep 0.05; done; seq 101 200`
	args, logDir := runArgs(t, f, "--detach", "--ps", "1", "--workers", "2", "--gpus-per-worker", "0",
		"--", "sh", "-c", script, "task", "{job_name}", flag)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	old := keeperOf(t, logDir)
	if err := syscall.Kill(old, sig); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(old, syscall.SIGKILL)

	a, home2, logDir2 := startAttach(t, f, id)
	env2 := append(f.Env(), "HOME="+home2)
	if !a.readUntil(func(line string) bool {
		return strings.Contains(line, "tfhive: run "+id+" adopted (keeper generation 2)")
	}) {
		a.Wait()
		t.Fatalf("attach -H did not adopt the run: %s", a.other.String())
	}
	// Every task's output from its start, then the old keeper woken.
	if !a.readUntil(func(line string) bool {
		return strings.HasPrefix(line, "[worker:1 ") && strings.HasSuffix(line, "] 100")
	}) {
		a.Wait()
		t.Fatalf("the adopter did not show worker:1's first lines: %s", a.other.String())
	}
	if sig == syscall.SIGSTOP {
		syscall.Kill(old, syscall.SIGCONT)
	}
	waitFor(t, 60*time.Second, "the old keeper to step down", func() bool {
		return syscall.Kill(old, 0) != nil || strings.Contains(readFile(t, filepath.Join(logDir, "console.log")), "stepping down")
	})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.readAll()
	if err := a.Wait(); err != nil {
		t.Fatalf("attach -H: %v\n%s", err, a.other.String())
	}
	s := summaryOf(t, logDir2)
	if s.Result != "succeeded" || taskByID(s, "ps:0").Outcome != "stopped" {
		t.Errorf("adopter's summary: %s, ps:0 %s (%s)\n%s", s.Result, taskByID(s, "ps:0").Outcome, taskByID(s, "ps:0").Error, a.read.String())
	}
	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(logDir2, "worker-1.log")), "\n"), "\n")
	if len(lines) != 200 || lines[0] != "1" || lines[199] != "200" {
		t.Errorf("adopter's worker-1.log: %d lines", len(lines))
	}
	w := tfhive(t, env2, home2, "wait", "--log-dir", logDir2, id)
	wantCode(t, w, 0)
	if sig == syscall.SIGSTOP {
		wantContains(t, "old keeper's console", readFile(t, filepath.Join(logDir, "console.log")), "adopted the run; stepping down")
	}
	noLeftovers(t, f, 10*time.Second)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
