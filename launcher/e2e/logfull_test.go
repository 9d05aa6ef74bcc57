package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A local log dir on a disk that fills up during the run: the run's own
// outcome stands and is printed, then one line says the record could not
// be written; the exit is 1 for a run that succeeded (the task's code for
// one that failed), and summary.json is whole or absent, never empty.
func TestRunLocalLogDirFull(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a full local disk needs root to mount a tmpfs")
		}
		t.Skip("a full local disk needs root to mount a tmpfs")
	}
	f := runFleet(t, "lf")
	for _, c := range []struct {
		name string
		rc   int
	}{{"succeeded", 0}, {"failed", 9}} {
		t.Run(c.name, func(t *testing.T) {
			disk := t.TempDir()
			if err := syscall.Mount("tfhive-e2e", disk, "tmpfs", 0, "size=64k"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
			logDir := filepath.Join(disk, "logs")
			r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "run", "--log-dir", logDir, "--workers", "1", "--gpus-per-worker", "0",
				"--", "sh", "-c", `seq 1 40000; exit "$1"`, "w", itoa(c.rc))...)
			want := map[int]int{0: 1, 9: 9}[c.rc]
			wantCode(t, r, want)
			wantContains(t, "stderr", r.stderr, "tfhive: error: the run "+c.name+", but its log dir could not take its record: ")
			wantContains(t, "stdout", r.stdout, "run ")
			if data, err := os.ReadFile(filepath.Join(logDir, "summary.json")); err == nil && len(data) == 0 {
				t.Errorf("summary.json is empty")
			} else if err == nil && !strings.HasSuffix(string(data), "}\n") {
				t.Errorf("summary.json is cut: %q", data[max(0, len(data)-40):])
			}
			noLeftovers(t, f, 10*time.Second)
		})
	}
}
