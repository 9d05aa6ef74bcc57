package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// readJSON decodes the JSON file name in dir.
func readJSON[T any](t *testing.T, dir, name string) T {
	t.Helper()
	var v T
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err == nil {
		err = json.Unmarshal(data, &v)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// waitHostPID is what host h calls the process pid of this machine (one
// its Command started), once the host has it: nsenter starts it a moment
// after its own start.
func waitHostPID(t *testing.T, h *sshtest.Host, pid int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n := h.HostPID(pid); n > 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no pid there for process %d", h.Name, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hostRunDir is run id's directory on host h: ~/.tfhive/runs-KEY/ID, KEY
// naming the machine's process table (launcher/supervisor/scripts/rundir.sh).
func hostRunDir(h *sshtest.Host, id string) string {
	return filepath.Join(h.RunsDir(), id)
}

// privateBed is the bed for a test whose hosts must not share a home:
// private homes where hosts are separate, else plain (whose hosts give the
// test user a home each).
func privateBed(t *testing.T) sshtest.Bed {
	if sshtest.DefaultBed(t).Separate() {
		return sshtest.PrivateHomes
	}
	return sshtest.Plain
}

// withoutClonesWarning is stderr less status's, plan's and doctor's
// warning that hosts report one machine id, which every fleet of the
// clones bed does: for tests about something else that read stderr whole.
func withoutClonesWarning(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(l, "tfhive: warning: ") || !strings.Contains(l, " report one machine id (") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}
