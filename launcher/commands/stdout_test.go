package commands

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/job"
)

// The first write to a pipe whose reader left delivers StdoutClosed, and
// only the first: a second delivery would kill the run at once.
func TestStdoutClosedDeliveredOnce(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got []os.Signal
	sigs := job.NewSignals(func(error) {})
	sigs.ToLauncher()
	out := WatchStdout(w, sigs)
	if _, err := out.Write([]byte("read\n")); err != nil || out.Closed() {
		t.Fatalf("a write with a reader: %v, closed %v", err, out.Closed())
	}
	r.Close()
	for range 3 {
		// Not fd 1 or 2: Go returns EPIPE here whatever SIGPIPE's handling.
		if _, err := out.Write([]byte("nobody reads\n")); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("write after the reader left: %v, want EPIPE", err)
		}
	}
	for len(sigs.Routed()) > 0 {
		got = append(got, <-sigs.Routed())
	}
	if len(got) != 1 || got[0] != launcher.StdoutClosed || !out.Closed() {
		t.Errorf("delivered %v, closed %v; want StdoutClosed once", got, out.Closed())
	}
}

// Other write errors are not a reader leaving: a full disk is not a
// reason to stop a run.
func TestStdoutOtherErrorsDeliverNothing(t *testing.T) {
	sigs := job.NewSignals(func(error) { t.Error("cancelled") })
	out := WatchStdout(failing{syscall.ENOSPC}, sigs)
	if _, err := out.Write([]byte("x")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error %v", err)
	}
	if out.Closed() || sigs.Last() != nil {
		t.Errorf("closed %v, last signal %v", out.Closed(), sigs.Last())
	}
}

type failing struct{ err error }

func (f failing) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: f.err}
}

// The watched stdout is still a terminal when its file is one: a run's
// console colours by it.
func TestIsTerminalSeesThroughStdout(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(WatchStdout(f, job.NewSignals(func(error) {}))) {
		t.Error("a file is a terminal")
	}
	tty := pseudoTerminal(t)
	if !isTerminal(WatchStdout(tty, job.NewSignals(func(error) {}))) {
		t.Error("the terminal, watched, is not a terminal")
	}
}

// pseudoTerminal opens the terminal side of a new pseudo-terminal.
func pseudoTerminal(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}
