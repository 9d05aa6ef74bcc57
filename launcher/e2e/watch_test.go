package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// TestStatusWatchReusesConnections refreshes several times over one SSH
// connection per host and ends cleanly on Ctrl-C.
func TestStatusWatchReusesConnections(t *testing.T) {
	f := sshtest.Start(t,
		sshtest.Profile{Name: "w1", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "w2", GPU: "busy-4gpu.xml"},
	)
	watch := startTfhive(t, f, readStdout, fleetArgs(f, "status", "--watch", "100ms")...)
	tables := 0
	watch.readUntil(func(line string) bool {
		if strings.HasPrefix(line, "HOST ") {
			tables++
		}
		return tables == 4
	})
	watch.Process.Signal(syscall.SIGINT)
	watch.readAll()
	err := watch.Wait()
	if tables < 4 {
		t.Fatalf("saw %d refreshes, want 4; stderr:\n%s", tables, watch.other.String())
	}
	if err != nil {
		t.Fatalf("Ctrl-C should end a watch with exit 0: %v\n%s", err, watch.other.String())
	}
	for _, h := range f.Hosts {
		log, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
		if n := strings.Count(string(log), "Accepted publickey"); n != 1 {
			t.Errorf("%s: %d SSH connections for %d refreshes, want 1", h.Name, n, tables)
		}
		if calls := h.SMICalls(); calls < tables {
			t.Errorf("%s: nvidia-smi ran %d times for %d refreshes", h.Name, calls, tables)
		}
	}
}
