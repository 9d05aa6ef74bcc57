package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// supervised is a supervisor started through the local executor, with its
// stdout readable line by line.
type supervised struct {
	p     remote.Started
	lines *bufio.Scanner
	errb  *strings.Builder
	done  chan int
}

func supervise(t *testing.T, tk Task) *supervised {
	t.Helper()
	pr, pw := io.Pipe()
	errb := &strings.Builder{}
	p, err := remote.Local{}.Start(context.Background(), Command, pw, errb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.Stdin(), Input(tk)); err != nil {
		t.Fatal(err)
	}
	s := &supervised{p: p, lines: bufio.NewScanner(pr), errb: errb, done: make(chan int, 1)}
	go func() {
		rc, _ := p.Wait()
		pw.Close()
		s.done <- rc
	}()
	t.Cleanup(func() { p.Kill() })
	return s
}

func (s *supervised) line(t *testing.T) string {
	t.Helper()
	if !s.lines.Scan() {
		t.Fatalf("supervisor ended without a line; stderr: %s", s.errb.String())
	}
	return s.lines.Text()
}

func (s *supervised) send(t *testing.T, ctl string) {
	t.Helper()
	if _, err := io.WriteString(s.p.Stdin(), ctl); err != nil {
		t.Fatal(err)
	}
}

func (s *supervised) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	go func() {
		for s.lines.Scan() {
		}
	}()
	select {
	case rc := <-s.done:
		return rc
	case <-time.After(within):
		out, _ := exec.Command("ps", "-eo", "pid,ppid,pgid,stat,args", "--forest").Output()
		t.Fatalf("supervisor still running after %s\n%s", within, out)
		return -1
	}
}

func TestSupervisorEnvArgvAndStops(t *testing.T) {
	env := map[string]string{"SECRET": "it's $x `y`\nz", "EMPTY": ""}
	argv := []string{"sh", "-c", `printf '<%s>' "$SECRET" "$EMPTY" "$@"; echo; exec sleep 30`, "x", "a b", "c'd", "", "*"}
	for _, stop := range []string{"term", "eof", "silent"} {
		t.Run(stop, func(t *testing.T) {
			s := supervise(t, Task{Env: env, Workdir: t.TempDir(), Setup: "echo setup-ran", Argv: argv, HeartbeatTimeout: 2 * time.Second})
			if got := s.line(t); got != ClaimOK {
				t.Fatalf("first line %q, want %q", got, ClaimOK)
			}
			s.send(t, CtlGo)
			if got := s.line(t); got != "setup-ran" {
				t.Fatalf("setup: %q", got)
			}
			if got, want := s.line(t), "<it's $x `y`"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			if got, want := s.line(t), "z><><a b><c'd><><*>"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			switch stop {
			case "term":
				s.send(t, CtlTerm)
			case "eof":
				s.p.Stdin().Close()
			case "silent": // no heartbeat: stopped after HeartbeatTimeout
			}
			if rc := s.wait(t, 15*time.Second); rc != 143 {
				t.Errorf("exit %d, want 143 (SIGTERM); stderr %q", rc, s.errb.String())
			}
		})
	}
}

func TestSupervisorAbortStartsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	s := supervise(t, Task{Argv: []string{"touch", marker}, HeartbeatTimeout: 5 * time.Second})
	s.line(t)
	s.send(t, CtlAbort)
	if rc := s.wait(t, 5*time.Second); rc != ExitClaimBusy {
		t.Errorf("exit %d, want %d", rc, ExitClaimBusy)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the task ran although tfhive aborted")
	}
}

func TestSupervisorClaims(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777|os.ModeSticky)
	t.Setenv("TFHIVE_CLAIMS_DIR", dir)
	claims := []inventory.Claim{{Kind: "gpu", ID: 0, UUID: "GPU-a"}, {Kind: "gpu", ID: 1, UUID: "GPU-b"}, {Kind: "port", ID: 2222}}
	a := supervise(t, Task{Argv: []string{"sleep", "60"}, Claims: claims, RunID: "run-a", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
	if got := a.line(t); got != ClaimOK {
		t.Fatalf("a: %q (stderr %s)", got, a.errb.String())
	}
	lock := filepath.Join(dir, "tfhive-claim.gpu-GPU-b.lock")
	if st, err := os.Lstat(lock); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 || st.Size() != 0 {
		t.Errorf("lock file %v: want an empty regular file, 0644, never written", err)
	}
	// The probe sees the claims, held by live processes labelled by the
	// holders' own command lines.
	held := heldClaims(t, dir)
	if len(held) != 3 || held[1].RunID != "run-a" || held[1].Task != "worker:0" || held[1].UUID != "GPU-b" || held[2].ID != 2222 {
		t.Fatalf("claims seen by the probe: %+v", held)
	}
	// A second run wanting GPU 1 is refused before it says anything.
	b := supervise(t, Task{Argv: []string{"true"}, Claims: claims[1:2], RunID: "run-b", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
	if rc := b.wait(t, 5*time.Second); rc != ExitClaimBusy {
		t.Errorf("b exit %d, want %d", rc, ExitClaimBusy)
	}
	a.send(t, CtlGo)

	// kill -9 of the supervisor releases its claims at once, and its
	// task, now unclaimed, is stopped.
	sup := supervisorOf(t, held[0].PID)
	taskPID := waitForChild(t, sup)
	syscall.Kill(sup, syscall.SIGKILL)
	if rc := a.wait(t, 15*time.Second); rc != 128+9 {
		t.Errorf("a exit %d, want 137", rc)
	}
	c := supervise(t, Task{Argv: []string{"true"}, Claims: claims, RunID: "run-c", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
	if got := c.line(t); got != ClaimOK {
		t.Fatalf("c after a was killed: %q", got)
	}
	c.send(t, CtlAbort)
	if syscall.Kill(taskPID, 0) == nil {
		t.Fatal("the task of a killed supervisor is still running when its session ended")
	}
}

// A lock file unlinked under its holder and made again (as its owner may
// in sticky /tmp): the next supervisor locks the new file, finds the
// first one's holder claiming the same GPU in /proc/locks and ends as
// taken (75) before it says anything; its other claims are not taken
// either, and a claim nobody else names goes through.
func TestSupervisorClaimTakenWhateverTheFile(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777|os.ModeSticky)
	t.Setenv("TFHIVE_CLAIMS_DIR", dir)
	gpu := inventory.Claim{Kind: "gpu", ID: 0, UUID: "GPU-a"}
	a := supervise(t, Task{Argv: []string{"sleep", "60"}, Claims: []inventory.Claim{gpu}, RunID: "run-a", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
	if got := a.line(t); got != ClaimOK {
		t.Fatalf("a: %q (stderr %s)", got, a.errb.String())
	}
	lock := filepath.Join(dir, "tfhive-claim.gpu-GPU-a.lock")
	os.Remove(lock)
	os.WriteFile(lock, nil, 0o644)
	b := supervise(t, Task{Argv: []string{"true"}, Claims: []inventory.Claim{{Kind: "port", ID: 2222}, gpu}, RunID: "run-b", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
	if rc := b.wait(t, 5*time.Second); rc != ExitClaimBusy {
		t.Errorf("b exit %d, want %d (stderr %s)", rc, ExitClaimBusy, b.errb.String())
	}
	if held := heldClaims(t, dir); len(held) != 1 || held[0].RunID != "run-a" || held[0].UUID != "GPU-a" {
		t.Errorf("claims after b: %+v, want a's GPU alone", held)
	}
	c := supervise(t, Task{Argv: []string{"true"}, Claims: []inventory.Claim{{Kind: "port", ID: 2222}, {Kind: "gpu", ID: 1, UUID: "GPU-b"}}, RunID: "run-c", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
	if got := c.line(t); got != ClaimOK {
		t.Errorf("c, whose claims nobody holds: %q (stderr %s)", got, c.errb.String())
	}
	c.send(t, CtlAbort)
	a.send(t, CtlAbort)
}

// A lock file someone else prepared is never written through: a symlink
// or a FIFO blocks the claim, named, and the target is untouched.
func TestSupervisorRefusesPreparedLockFiles(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777|os.ModeSticky)
	t.Setenv("TFHIVE_CLAIMS_DIR", dir)
	target := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(target, []byte("keep me"), 0o644)
	os.Symlink(target, filepath.Join(dir, "tfhive-claim.gpu-GPU-a.lock"))
	exec.Command("mkfifo", filepath.Join(dir, "tfhive-claim.port-2222.lock")).Run()
	for _, c := range []inventory.Claim{{Kind: "gpu", ID: 0, UUID: "GPU-a"}, {Kind: "port", ID: 2222}} {
		s := supervise(t, Task{Argv: []string{"true"}, Claims: []inventory.Claim{c}, RunID: "r", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
		if got := s.line(t); !strings.HasPrefix(got, ClaimBlocked) || !strings.Contains(got, "is not a regular file") {
			t.Errorf("%v: %q", c, got)
		}
		s.wait(t, 5*time.Second)
	}
	if data, _ := os.ReadFile(target); string(data) != "keep me" {
		t.Errorf("symlink target changed: %q", data)
	}
	// A claims dir another user could swap files in is refused.
	loose := t.TempDir()
	os.Chmod(loose, 0o777)
	t.Setenv("TFHIVE_CLAIMS_DIR", loose)
	s := supervise(t, Task{Argv: []string{"true"}, Claims: []inventory.Claim{{Kind: "port", ID: 1}}, RunID: "r", ID: "worker:0", HeartbeatTimeout: 10 * time.Second})
	if got := s.line(t); !strings.Contains(got, "is writable by others and not sticky") {
		t.Errorf("loose dir: %q", got)
	}
}

// heldClaims is what a claims-only probe of this machine sees (dir is
// TFHIVE_CLAIMS_DIR in the environment it inherits).
func heldClaims(t *testing.T, dir string) []inventory.Claim {
	t.Helper()
	f := probe.NewFleet([]inventory.Host{hosts.Local()}, probe.Options{ClaimsOnly: true})
	defer f.Close()
	h := f.Probe(context.Background()).Hosts[0]
	if h.Err != nil || h.ClaimsDir != dir {
		t.Fatalf("probe: %v, claims dir %q", h.Err, h.ClaimsDir)
	}
	return h.Claims
}

// supervisorOf is the supervisor under a holder chain: the first
// descendant of pid that is not a flock.
func supervisorOf(t *testing.T, pid int) int {
	t.Helper()
	for i := 0; i < 20; i++ {
		kids := children(pid)
		if len(kids) != 1 {
			t.Fatalf("pid %d has children %v", pid, kids)
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", kids[0]))
		if strings.TrimSpace(string(comm)) != "flock" {
			return kids[0]
		}
		pid = kids[0]
	}
	t.Fatal("no supervisor under the holders")
	return 0
}

// waitForChild waits for the supervisor's task: its child in a session of
// its own.
func waitForChild(t *testing.T, sup int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, k := range children(sup) {
			if sid, _ := unix.Getsid(k); sid == k {
				return k
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the task did not start")
	return 0
}

func children(pid int) []int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var kids []int
	for _, f := range strings.Fields(string(data)) {
		var k int
		fmt.Sscan(f, &k)
		kids = append(kids, k)
	}
	return kids
}

// sshd runs the supervisor's command line with the user's login shell,
// which may be csh or zsh: the command survives them, reads exactly its
// length line and script, and then its control lines.
func TestSupervisorCommandUnderLoginShells(t *testing.T) {
	tk := Task{Env: map[string]string{"V": "it's $HOME"}, Argv: []string{"sh", "-c", `echo "task: $V"`}, HeartbeatTimeout: 10 * time.Second}
	script := Input(tk)
	for _, shell := range []string{"tcsh", "zsh", "bash", "sh"} {
		if path := sshtest.LoginShell(t, shell); path != "" {
			runSupervisorCommand(t, shell, path, "/usr/bin:/bin", script)
		}
	}
	// A dd without iflag=fullblock (an old busybox) refuses it before
	// reading anything: the byte-by-byte fallback reads the script.
	old := t.TempDir()
	dd := "#!/bin/sh\necho \"$*\" >>\"$0.calls\"\ncase \"$*\" in *iflag=*) echo 'dd: invalid iflag' >&2; exit 1;; esac\nexec /bin/dd \"$@\"\n"
	if err := os.WriteFile(filepath.Join(old, "dd"), []byte(dd), 0o755); err != nil {
		t.Fatal(err)
	}
	runSupervisorCommand(t, "sh, old dd", "/bin/sh", old+":/usr/bin:/bin", script)
	calls, _ := os.ReadFile(filepath.Join(old, "dd.calls"))
	n1, n2 := len(claimStage(tk)), len(runStage(tk))
	if want := fmt.Sprintf("bs=%[1]d count=1 iflag=fullblock\nbs=1 count=%[1]d\nbs=%[2]d count=1 iflag=fullblock\nbs=1 count=%[2]d\n", n1, n2); string(calls) != want {
		t.Errorf("old dd called as %q, want %q", calls, want)
	}
}

// runSupervisorCommand starts Command under a login shell,
// sends it the script and "go" in one write (a reader that read ahead
// would eat the go and hang), and checks that the task ran.
func runSupervisorCommand(t *testing.T, name, shell, path, script string) {
	t.Helper()
	cmd := exec.Command(shell, "-c", Command)
	cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // it signals its group when done
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, script+CtlGo)
	lines := bufio.NewScanner(out)
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
		if len(got) == 2 {
			break
		}
	}
	// The supervisor exits when its task has; only then is stdin closed
	// (EOF earlier would stop a task still exiting).
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var rc error
	select {
	case rc = <-waited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s: the supervisor did not exit after its task", name)
	}
	if len(got) != 2 || got[0] != ClaimOK || got[1] != "task: it's $HOME" || rc != nil {
		t.Errorf("%s: lines %q, exit %v, stderr %q", name, got, rc, errb.String())
	}
}

// A holder killed (here the outermost, holding GPU 0) has released its
// claim: the supervisor stops its task at the next control line and the
// other holders let go of theirs.
func TestSupervisorStopsWhenAHolderDies(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777|os.ModeSticky)
	t.Setenv("TFHIVE_CLAIMS_DIR", dir)
	claims := []inventory.Claim{{Kind: "gpu", ID: 0, UUID: "GPU-a"}, {Kind: "port", ID: 2222}}
	s := supervise(t, Task{Argv: []string{"sleep", "60"}, Claims: claims, RunID: "r", ID: "worker:0", HeartbeatTimeout: 30 * time.Second})
	if got := s.line(t); got != ClaimOK {
		t.Fatalf("%q (stderr %s)", got, s.errb.String())
	}
	s.send(t, CtlGo)
	held := heldClaims(t, dir)
	if len(held) != 2 || held[0].PID == held[1].PID {
		t.Fatalf("want two claims with their own holders: %+v", held)
	}
	waitForChild(t, supervisorOf(t, held[0].PID))
	syscall.Kill(held[0].PID, syscall.SIGKILL)
	// Heartbeats, as tfhive sends them: the first may still find the
	// holder dying.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				io.WriteString(s.p.Stdin(), CtlHeartbeat)
			}
		}
	}()
	// The session's own process was the killed holder.
	if rc := s.wait(t, 15*time.Second); rc != 128+9 {
		t.Errorf("exit %d, want 137", rc)
	}
	if left := heldClaims(t, dir); len(left) != 0 {
		t.Errorf("claims still held: %+v", left)
	}
}

// A SIGTERM (tfhive kill) at any moment after the claim line is a stop
// of the task, never the supervisor's own death: the task is stopped
// (or never runs), and the supervisor says the run was cancelled. Sent
// right after go, it came while the task was being started, before
// the supervisor's handler, and killed the supervisor outright (CI:
// TestKillCancelsDetachedRun's worker:1 ended "exited", code 143).
func TestSupervisorTermedRightAfterGo(t *testing.T) {
	marker := fmt.Sprintf("tfhive-termed-%d", os.Getpid())
	for i := 0; i < 20; i++ {
		// A grace, so that the task ends by the SIGTERM (143): at 0 the
		// SIGKILL follows at once, and a task not yet scheduled ends by
		// that (137).
		s := supervise(t, Task{Argv: []string{"bash", "-c", "sleep 60 & wait", marker}, HeartbeatTimeout: 30 * time.Second, Grace: 10 * time.Second})
		if got := s.line(t); got != ClaimOK {
			t.Fatalf("%q (stderr %s)", got, s.errb.String())
		}
		s.send(t, CtlGo)
		if i%2 == 1 {
			waitForChild(t, s.p.(interface{ Pid() int }).Pid())
		}
		syscall.Kill(s.p.(interface{ Pid() int }).Pid(), syscall.SIGTERM)
		rc := s.wait(t, 15*time.Second)
		if !strings.Contains(s.errb.String(), "@@tfhive-cancelled ") || rc != 128+15 {
			t.Fatalf("try %d: exit %d, stderr %q, want the cancelled line and 143", i, rc, s.errb.String())
		}
	}
	if out, err := exec.Command("pgrep", "-f", marker).Output(); err == nil {
		t.Errorf("tasks left running: %s", out)
	}
}

// A supervisor killed at any moment after go, even before its task has
// started, leaves no task behind: the watcher exists before the task and
// learns its pid from the task's own shell.
func TestSupervisorKilledRightAfterGo(t *testing.T) {
	marker := fmt.Sprintf("tfhive-orphan-%d", os.Getpid())
	for i := 0; i < 20; i++ {
		s := supervise(t, Task{Argv: []string{"bash", "-c", "sleep 60 & wait", marker}, HeartbeatTimeout: 30 * time.Second})
		if got := s.line(t); got != ClaimOK {
			t.Fatalf("%q (stderr %s)", got, s.errb.String())
		}
		s.send(t, CtlGo)
		syscall.Kill(s.p.(interface{ Pid() int }).Pid(), syscall.SIGKILL)
		s.wait(t, 15*time.Second)
	}
	if out, err := exec.Command("pgrep", "-f", marker).Output(); err == nil {
		t.Errorf("tasks left running: %s", out)
	}
}
