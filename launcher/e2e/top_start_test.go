package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// top on a terminal that answers none of the queries a program may send
// it (a bare pseudo-terminal: nobody reads its master but this test) and
// is tfhive's controlling terminal, with TERM=xterm-256color and no CI in
// the environment, as in a user's session: its first frame comes within
// four times what `tfhive status` of the same fleet into a pipe takes (a
// probe of the fleet, no terminal), and "?" typed the moment it starts
// is not lost (the help comes), then q quits. Before, Bubble Tea v1's
// init (lipgloss.HasDarkBackground, termenv's OSC 11 query) waited 5 s
// for an answer in every tfhive command on a terminal, and read away what
// was typed meanwhile: the "?" never arrived.
func TestTopStartsAtOnceOnASilentTerminal(t *testing.T) {
	f := runFleet(t, "t1")
	root := t.TempDir()
	base := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, base, 0)

	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80})
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tfhiveBin, fleetArgs(f, "top", "--log-root", root)...)
	for _, kv := range f.Env() {
		if k, _, _ := strings.Cut(kv, "="); k != "CI" && k != "TERM" && k != "NO_COLOR" && k != "TMUX" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env, cmd.Dir = append(cmd.Env, "TERM=xterm-256color"), f.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// The terminal is tfhive's controlling one, and tfhive is in its
	// foreground: what a query of the terminal needs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var mu sync.Mutex
	var out bytes.Buffer
	var firstFrame time.Duration
	done := make(chan struct{})
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	master.Write([]byte("?")) // typed at once
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			if firstFrame == 0 && strings.Contains(out.String(), "tfhive top") {
				firstFrame = time.Since(start)
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	screen := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(screen(), "tfhive top: keys") {
		if time.Now().After(deadline) {
			t.Fatalf("the ? typed at start never showed the help (lost):\n%q", screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	first := firstFrame
	mu.Unlock()
	if limit := 4 * base.elapsed; first > limit {
		t.Errorf("first frame after %s, want within %s (4 × status into a pipe, %s)", first, limit, base.elapsed)
	}
	master.Write([]byte("q")) // help: any key goes back
	master.Write([]byte("q"))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("top: %v\n%q", err, screen())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("q did not quit top:\n%q", screen())
	}
}
