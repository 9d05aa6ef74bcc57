package sshtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// runsKey is the name of a machine's directory of runs, runs-KEY
// (launcher/supervisor/scripts/rundir.sh's tfhive_runsdir), worked out
// here from outside: the machine id (or "host-" and the hostname when it
// is not 32 hex digits), the boot id's first word and the PID namespace's
// number, which clones of one image never share.
func runsKey(machineID, hostname, pidNS string) string {
	k := machineID
	if len(k) != 32 || strings.Trim(k, "0123456789abcdef") != "" {
		k = "host-" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r) {
				return r
			}
			return '_'
		}, hostname)
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	b, _, _ := strings.Cut(strings.TrimSpace(string(boot)), "-")
	ns := strings.TrimSuffix(strings.TrimPrefix(pidNS, "pid:["), "]")
	return fmt.Sprintf("runs-%s-%s-%s", k, b, ns)
}

// LocalRunsKey is the name of this machine's directory of runs under
// ~/.tfhive, as a host that is this very process table names it.
func LocalRunsKey() string {
	id, _ := os.ReadFile("/etc/machine-id")
	name, _ := os.Hostname()
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return runsKey(strings.TrimSpace(string(id)), name, ns)
}

// RunsDir is the host's directory of runs for the test user,
// ~/.tfhive/runs-KEY: its own on a separate host, the test machine's
// on a plain one.
func (h *Host) RunsDir() string {
	if !h.bed.Separate() {
		return filepath.Join(h.Home(), ".tfhive", LocalRunsKey())
	}
	ns := ""
	if init, err := h.InitPID(); err == nil {
		ns, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", init))
	}
	return filepath.Join(h.Home(), ".tfhive", runsKey(h.MachineID(), h.hostname(), ns))
}
