package launcher

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

	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// supervised is a supervisor started through the local executor, with its
// stdout readable line by line.
type supervised struct {
	p     probe.Started
	lines *bufio.Scanner
	errb  *strings.Builder
	done  chan int
}

func supervise(t *testing.T, tk task) *supervised {
	t.Helper()
	script := supervisorScript(tk)
	pr, pw := io.Pipe()
	errb := &strings.Builder{}
	p, err := probe.LocalExec{}.Start(context.Background(), SupervisorCommand, pw, errb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.Stdin(), supervisorInput(script)); err != nil {
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
		t.Fatalf("supervisor still running after %s", within)
		return -1
	}
}

func TestSupervisorEnvArgvAndStops(t *testing.T) {
	env := map[string]string{"SECRET": "it's $x `y`\nz", "EMPTY": ""}
	argv := []string{"sh", "-c", `printf '<%s>' "$SECRET" "$EMPTY" "$@"; echo; exec sleep 30`, "x", "a b", "c'd", "", "*"}
	for _, stop := range []string{"term", "eof", "silent"} {
		t.Run(stop, func(t *testing.T) {
			s := supervise(t, task{Env: env, Workdir: t.TempDir(), Setup: "echo setup-ran", Argv: argv, HeartbeatTimeout: 2 * time.Second})
			if got := s.line(t); got != claimOK {
				t.Fatalf("first line %q, want %q", got, claimOK)
			}
			s.send(t, ctlGo)
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
				s.send(t, ctlTerm)
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
	s := supervise(t, task{Argv: []string{"touch", marker}, HeartbeatTimeout: 5 * time.Second})
	s.line(t)
	s.send(t, ctlAbort)
	if rc := s.wait(t, 5*time.Second); rc != exitClaimBusy {
		t.Errorf("exit %d, want %d", rc, exitClaimBusy)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the task ran although tfhive aborted")
	}
}

func TestSupervisorClaims(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TFHIVE_CLAIMS_DIR", dir)
	claims := []string{"gpu-0", "gpu-1", "port-2222"}
	a := supervise(t, task{Argv: []string{"sleep", "60"}, Claims: claims, Meta: "run=run-a task=worker:0", HeartbeatTimeout: 10 * time.Second})
	if got := a.line(t); got != claimOK {
		t.Fatalf("a: %q (stderr %s)", got, a.errb.String())
	}
	if st, err := os.Stat(dir); err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("claims dir mode %v: want sticky and world-writable", st.Mode())
	}
	if st, _ := os.Stat(filepath.Join(dir, "gpu-0.lock")); st.Mode().Perm() != 0o666 {
		t.Errorf("lock file mode %v, want 0666 so other users can claim it later", st.Mode().Perm())
	}
	// A second run wanting GPU 1 is refused and names the holder.
	b := supervise(t, task{Argv: []string{"true"}, Claims: []string{"gpu-1"}, Meta: "run=run-b", HeartbeatTimeout: 10 * time.Second})
	if got := b.line(t); !strings.HasPrefix(got, claimBusy+"gpu-1 run=run-a task=worker:0 user=") {
		t.Fatalf("b: %q", got)
	}
	if rc := b.wait(t, 5*time.Second); rc != exitClaimBusy {
		t.Errorf("b exit %d, want %d", rc, exitClaimBusy)
	}
	a.send(t, ctlGo)
	var meta string
	for i := 0; i < 50 && !strings.Contains(meta, "pgid=") || strings.Contains(meta, "pgid=0"); i++ {
		data, _ := os.ReadFile(filepath.Join(dir, "port-2222.lock"))
		meta = string(data)
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasPrefix(meta, "run=run-a task=worker:0 user=") || strings.Contains(meta, "pgid=0") {
		t.Fatalf("claim file: %q", meta)
	}

	// kill -9 of the supervisor releases its claims at once, and its
	// task, now unclaimed, is stopped.
	syscall.Kill(a.p.(interface{ Pid() int }).Pid(), syscall.SIGKILL)
	c := supervise(t, task{Argv: []string{"true"}, Claims: claims, Meta: "run=run-c", HeartbeatTimeout: 10 * time.Second})
	if got := c.line(t); got != claimOK {
		t.Fatalf("c after a was killed: %q", got)
	}
	c.send(t, ctlAbort)
	a.wait(t, 15*time.Second)
	pgid := strings.TrimSpace(meta[strings.Index(meta, "pgid=")+5:])
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-atoiOr(pgid), 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the task of a killed supervisor is still running")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func atoiOr(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// sshd runs the supervisor's command line with the user's login shell,
// which may be csh or zsh: the command survives them, reads exactly its
// length line and script, and then its control lines.
func TestSupervisorCommandUnderLoginShells(t *testing.T) {
	script := supervisorScript(task{Env: map[string]string{"V": "it's $HOME"}, Argv: []string{"sh", "-c", `echo "task: $V"`}, HeartbeatTimeout: 10 * time.Second})
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
	if want := fmt.Sprintf("bs=%[1]d count=1 iflag=fullblock\nbs=1 count=%[1]d\n", len(script)); string(calls) != want {
		t.Errorf("old dd called as %q, want %q", calls, want)
	}
}

// runSupervisorCommand starts SupervisorCommand under a login shell,
// sends it the script and "go" in one write (a reader that read ahead
// would eat the go and hang), and checks that the task ran.
func runSupervisorCommand(t *testing.T, name, shell, path, script string) {
	t.Helper()
	cmd := exec.Command(shell, "-c", SupervisorCommand)
	cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // it signals its group when done
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, supervisorInput(script)+ctlGo)
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
	if len(got) != 2 || got[0] != claimOK || got[1] != "task: it's $HOME" || rc != nil {
		t.Errorf("%s: lines %q, exit %v, stderr %q", name, got, rc, errb.String())
	}
}
