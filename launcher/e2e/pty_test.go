package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// onTerminal is tfhive started with a pseudo-terminal as its stdout and
// stderr, as in a user's terminal (Linux's /dev/ptmx; no package of its
// own needed). What it writes is gathered as the terminal gets it: "\n"
// comes as "\r\n" (the line discipline's ONLCR).
type onTerminal struct {
	*exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{} // closed once the terminal reads no more
}

// startOnTerminal starts tfhive in f's directory with f's environment,
// less NO_COLOR and TERM, plus env. The test's end kills it if it still
// runs.
func startOnTerminal(t *testing.T, f *sshtest.Fleet, env []string, args ...string) *onTerminal {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := &onTerminal{Cmd: exec.Command(tfhiveBin, args...), done: make(chan struct{})}
	for _, kv := range f.Env() {
		if !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "TERM=") {
			r.Env = append(r.Env, kv)
		}
	}
	r.Env, r.Dir = append(r.Env, env...), f.Dir
	r.Stdout, r.Stderr = slave, slave
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // tfhive holds it now: its end is the terminal's
	go func() {
		defer close(r.done)
		defer master.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil { // EIO once every holder of the slave is gone
				return
			}
		}
	}()
	t.Cleanup(func() { r.Process.Kill(); r.Wait() })
	return r
}

// output is what the terminal got so far.
func (r *onTerminal) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits up to within for the terminal to show s.
func (r *onTerminal) waitFor(t *testing.T, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(r.output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the terminal after %s:\n%q", s, within, r.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// end waits for tfhive to exit and the terminal to have read it all, and
// returns its exit code and output.
func (r *onTerminal) end(t *testing.T) (int, string) {
	t.Helper()
	err := r.Wait()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the terminal still reads after tfhive exited")
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, r.output()
}
