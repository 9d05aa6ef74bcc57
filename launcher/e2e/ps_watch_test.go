package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

func sshConnections(h *sshtest.Host) int {
	log, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
	return strings.Count(string(log), "Accepted publickey")
}

// `ps --watch` into a pipe prints the table again only when the runs
// change: a run that starts, refreshes that change nothing (its GPU's
// live utilisation aside) print nothing, the run gone is a table again;
// every refresh goes over the one connection per host; Ctrl-C: exit 0.
func TestPsWatchPrintsChanges(t *testing.T) {
	f := runFleet(t, "pw1")
	h := f.Hosts[0]
	watch := startTfhive(t, f, readStdout, fleetArgs(f, "ps", "--watch", "100ms")...)
	tables := 0
	table := func(line string) bool {
		if strings.HasPrefix(line, "RUN ") {
			tables++
			return true
		}
		return false
	}
	if !watch.readUntil(func(line string) bool { table(line); return tables == 1 }) {
		t.Fatalf("no table: %s", watch.other.String())
	}
	watchConns := sshConnections(h)

	args, _ := runArgs(t, f, "--name", "watched", "--workers", "1", "--", "sh", "-c", "echo started; exec sleep 300")
	run, _ := startRun(t, f, args...)
	// Starting, then running: each a table.
	running := func(line string) bool {
		return strings.HasPrefix(line, "watched ") && strings.Contains(line, " running ")
	}
	if !watch.readUntil(func(line string) bool { table(line); return running(line) }) {
		t.Fatalf("the run never listed running:\n%s", watch.read.String())
	}
	shown := tables
	// Three more refreshes (each asks the host's nvidia-smi for the run's
	// GPU), and nothing printed: nothing changed.
	calls := h.SMICalls()
	deadline := time.Now().Add(20 * time.Second)
	for h.SMICalls() < calls+3 {
		if time.Now().After(deadline) {
			t.Fatalf("no refresh in 20s: %d nvidia-smi calls", h.SMICalls())
		}
		time.Sleep(50 * time.Millisecond)
	}
	conns := sshConnections(h)

	run.Process.Signal(syscall.SIGINT)
	run.Wait()
	// The run gone: a table without it (after one saying it stops, may be).
	var last []string
	if !watch.readUntil(func(line string) bool {
		if table(line) {
			last = nil
			return false
		}
		if tables > shown {
			last = append(last, line)
		}
		return tables > shown && line == "" && !strings.Contains(strings.Join(last, "\n"), "watched")
	}) {
		t.Fatalf("no table without the run once it ended:\n%s", watch.read.String())
	}
	if n := strings.Count(watch.read.String(), " running "); n != 1 {
		t.Errorf("the running run listed %d times, though nothing changed:\n%s", n, watch.read.String())
	}
	watch.Process.Signal(syscall.SIGINT)
	watch.readAll()
	if err := watch.Wait(); err != nil {
		t.Errorf("Ctrl-C should end a watch with exit 0: %v\n%s", err, watch.other.String())
	}
	// The run's own connection came meanwhile; the watch's refreshes
	// opened none.
	if got := sshConnections(h); got != conns || watchConns != 1 {
		t.Errorf("SSH connections: %d before the run, %d after 3 refreshes, %d at the end", watchConns, conns, got)
	}
}

// On a terminal `ps --watch` redraws in place under a header, as watch(1).
func TestPsWatchRedraws(t *testing.T) {
	f := runFleet(t, "pw2")
	term := startOnTerminal(t, f, []string{"TERM=xterm"}, fleetArgs(f, "ps", "-w", "100ms")...)
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(term.output(), "\x1b[H\x1b[2JEvery 100ms: tfhive ps") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("not 3 redraws in 20s:\n%q", term.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	term.Process.Signal(syscall.SIGINT)
	if code, out := term.end(t); code != 0 || !strings.Contains(out, "RUN ") {
		t.Errorf("exit %d, want 0:\n%q", code, out)
	}
	if n := sshConnections(f.Hosts[0]); n != 1 {
		t.Errorf("%d SSH connections, want 1", n)
	}
}
