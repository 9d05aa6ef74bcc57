package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// idleGPU puts on PATH an nvidia-smi that says every GPU asked about is
// at 0%: the idle watch (scripts/idle-watch.sh) sees an idle task.
func idleGPU(t *testing.T) {
	dir := t.TempDir()
	smi := "#!/bin/sh\necho '0, GPU-test, 0, 100'\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(smi), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
}

// trapsInt is a task that says when SIGINT came and what its deadline
// file said, then goes on: only the SIGKILL after the grace ends it.
const trapsInt = `trap 'echo "got-int $(cat "$TFHIVE_STOP_DEADLINE") $TFHIVE_STOP_DEADLINE"' INT
trap 'echo got-term' TERM
echo ready
while :; do sleep 0.05; done`

// The idle stop is a stop like the others: the run's --stop-signal
// (SIGINT here, not SIGTERM), the deadline file written first (a grace
// away), and SIGKILL only once the grace is over by the clock, however
// many "b" lines come meanwhile (each one ends a read on the watch's
// pipe at once: a grace counted in reads was over at the 20th). The
// deadline file's directory is gone once the supervisor has ended.
func TestIdleStopSendsTheStopSignalAndKeepsTheGrace(t *testing.T) {
	idleGPU(t)
	grace := 2 * time.Second
	s := supervise(t, Task{Argv: []string{"bash", "-c", trapsInt}, HeartbeatTimeout: 30 * time.Second,
		Grace: grace, StopSignal: "INT", IdleGPUs: []int{0}, IdleEvery: 100 * time.Millisecond,
		Idle: inventory.IdleRule{Below: 5, Stop: 500 * time.Millisecond}})
	if got := s.line(t); got != ClaimOK {
		t.Fatalf("%q (stderr %s)", got, s.errb.String())
	}
	s.send(t, CtlGo)
	if got := s.line(t); got != "ready" {
		t.Fatalf("%q (stderr %s)", got, s.errb.String())
	}
	got := s.line(t)
	stopped := time.Now()
	f := strings.Fields(got)
	if len(f) != 3 || f[0] != "got-int" {
		t.Fatalf("the idle stop sent %q, want got-int DEADLINE FILE (stderr %s)", got, s.errb.String())
	}
	if dl, err := strconv.ParseInt(f[1], 10, 64); err != nil || dl < time.Now().Unix()+1 || dl > time.Now().Unix()+3 {
		t.Errorf("deadline %q, want about %s from now", f[1], grace)
	}
	// Heartbeats' holds, many, while the grace runs.
	s.send(t, strings.Repeat(CtlIdleHold, 200))
	rc := s.wait(t, 15*time.Second)
	if took := time.Since(stopped); took < grace-300*time.Millisecond {
		t.Errorf("SIGKILL %s after the stop signal, want the grace, %s", took, grace)
	}
	if rc != 137 {
		t.Errorf("exit %d, want 137 (SIGKILL after the grace); stderr %s", rc, s.errb.String())
	}
	if !strings.Contains(s.errb.String(), "@@tfhive-idle") {
		t.Errorf("stderr %q, want the idle-stopped line", s.errb.String())
	}
	if _, err := os.Stat(filepath.Dir(f[2])); !os.IsNotExist(err) {
		t.Errorf("the deadline's directory %s is left behind (%v)", filepath.Dir(f[2]), err)
	}
}

// A supervisor killed outright leaves no deadline directory behind
// either: its watcher, which stops the task, removes it.
func TestSupervisorKilledLeavesNoDeadlineDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	s := supervise(t, Task{Argv: []string{"sh", "-c", `echo "$TFHIVE_STOP_DEADLINE"; exec sleep 60`}, HeartbeatTimeout: 30 * time.Second})
	if got := s.line(t); got != ClaimOK {
		t.Fatalf("%q (stderr %s)", got, s.errb.String())
	}
	s.send(t, CtlGo)
	dl := s.line(t)
	dir := filepath.Dir(dl)
	if filepath.Dir(dir) != filepath.Join(home, ".tfhive") || !strings.HasPrefix(filepath.Base(dir), "stop.") {
		t.Fatalf("TFHIVE_STOP_DEADLINE %q, want a file in a ~/.tfhive/stop.* directory", dl)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the deadline's directory: %v", err)
	}
	// No claims: no holders, the process started is the supervisor.
	if err := syscall.Kill(s.p.(interface{ Pid() int }).Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there 10 s after its supervisor was killed", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.wait(t, 15*time.Second)
}

// A task that is not kept (--reconnect 0) has its deadline file in a
// fresh directory of the user's own under ~/.tfhive (0700), never in
// /tmp or $TMPDIR, where another user could rename the directory away
// and put their own in its place. A ~/.tfhive that is not a real
// directory of the user's own with mode 0700 gives no variable at all
// (fail closed), and nothing is made through it.
func TestStopDeadlineDirIsTheUsers(t *testing.T) {
	const task = `echo "dl=${TFHIVE_STOP_DEADLINE-unset}"`
	for _, c := range []struct {
		name    string
		prepare func(t *testing.T, home, elsewhere string)
		refused bool
	}{
		{name: "made when missing"},
		{name: "taken when there", prepare: func(t *testing.T, home, _ string) {
			mkdirs(t, filepath.Join(home, ".tfhive"))
		}},
		{name: "a symbolic link", prepare: func(t *testing.T, home, elsewhere string) {
			symlink(t, elsewhere, filepath.Join(home, ".tfhive"))
		}, refused: true},
		{name: "mode 0755", prepare: func(t *testing.T, home, _ string) {
			mkdirs(t, filepath.Join(home, ".tfhive"))
			os.Chmod(filepath.Join(home, ".tfhive"), 0o755)
		}, refused: true},
		{name: "a file", prepare: func(t *testing.T, home, _ string) {
			os.WriteFile(filepath.Join(home, ".tfhive"), nil, 0o600)
		}, refused: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, elsewhere, tmp := t.TempDir(), t.TempDir(), t.TempDir()
			// A TMPDIR anyone may write in, sticky bit or not.
			if err := os.Chmod(tmp, 0o777); err != nil {
				t.Fatal(err)
			}
			t.Setenv("HOME", home)
			t.Setenv("TMPDIR", tmp)
			if c.prepare != nil {
				c.prepare(t, home, elsewhere)
			}
			s := supervise(t, Task{Argv: []string{"sh", "-c", task}, HeartbeatTimeout: 30 * time.Second})
			if got := s.line(t); got != ClaimOK {
				t.Fatalf("%q (stderr %s)", got, s.errb.String())
			}
			s.send(t, CtlGo)
			got := strings.TrimPrefix(s.line(t), "dl=")
			s.wait(t, 15*time.Second)
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("something was made in $TMPDIR: %v", left)
			}
			if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
				t.Errorf("something was made through the link: %v", left)
			}
			if c.refused {
				if got != "unset" {
					t.Errorf("TFHIVE_STOP_DEADLINE %q, want none: ~/.tfhive is not the user's own", got)
				}
				return
			}
			dir := filepath.Dir(got)
			if filepath.Dir(dir) != filepath.Join(home, ".tfhive") || !strings.HasPrefix(filepath.Base(dir), "stop.") || filepath.Base(got) != "deadline" {
				t.Fatalf("TFHIVE_STOP_DEADLINE %q, want HOME/.tfhive/stop.*/deadline", got)
			}
			if fi, err := os.Lstat(filepath.Join(home, ".tfhive")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("~/.tfhive: %v %v, want a directory, 0700", fi.Mode(), err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the deadline's directory %s is left behind (%v)", dir, err)
			}
		})
	}
}
