package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// Command lines that cannot work are exit 2 before any host is touched:
// a run id that kill, wait, attach or logs would refuse (run --name
// included: a run started under one could not be found again), and an
// identity file or known_hosts that no dial could read (not the exit 4
// of hosts that "could not be reached"), a known placeholder whose brace
// is not closed (it passed through literally).
func TestCLIRefusedBeforeAnyHost(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml"})
	h := f.Host("h1")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "known_hosts.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(f.SSHConfig)
	if err != nil {
		t.Fatal(err)
	}
	config := func(name, knownHosts string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(strings.ReplaceAll(string(cfg), f.KnownHosts, knownHosts)), 0o600)
		return path
	}
	khFIFO, khZero := config("ssh_config.fifo", fifo), config("ssh_config.zero", "/dev/zero")
	idZero := filepath.Join(dir, "hosts-zero.yaml")
	os.WriteFile(idZero, []byte("hosts:\n  - address: h1\n    identity_file: /dev/zero\n"), 0o600)
	long := strings.Repeat("r", 77)
	notID := `is not a run id` + "\ntfhive: hint: a run id is letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{fleetArgs(f, "run", "--name", long, "--", "true"), `tfhive: error: --name "` + long + `" ` + notID},
		{fleetArgs(f, "run", "--name=-x", "--", "true"), `tfhive: error: --name "-x" ` + notID},
		{fleetArgs(f, "run", "--name", ".", "--", "true"), `tfhive: error: --name "." ` + notID},
		{fleetArgs(f, "run", "--detach", "--name", "..", "--", "true"), `tfhive: error: --name ".." ` + notID},
		{fleetArgs(f, "kill", "../../x"), `tfhive: error: "../../x" ` + notID},
		{fleetArgs(f, "kill", long), `tfhive: error: "` + long + `" ` + notID},
		{fleetArgs(f, "run", "--", "python", "train.py", "--task_index={task_index"),
			`tfhive: error: placeholder {task_index is not closed in "--task_index={task_index"` + "\ntfhive: hint: write {task_index}, or {{task_index for a literal {task_index\n"},
		// A sweep refuses what each of its trials' runs would, before any host.
		{fleetArgs(f, "sweep", "--param", "a=1,2", "--check", "--import", "os;id", "--", "true"), `tfhive: error: --import "os;id" is not a Python module name`},
		{fleetArgs(f, "sweep", "--param", "a=1,2", "--grace", "-1s", "--", "true"), `tfhive: error: --grace must not be negative`},
		{fleetArgs(f, "ps", "--watch", "nope"), `tfhive: error: --watch "nope": not an interval of 100ms or more` + "\ntfhive: hint: e.g. tfhive ps --watch 5s\n"},
		{fleetArgs(f, "ps", "--watch", "10ms"), `tfhive: error: --watch "10ms": not an interval of 100ms or more`},
		{fleetArgs(f, "ps", "-w", "1s", "2s"), `tfhive: error: unexpected argument "2s"`},
		{fleetArgs(f, "ps", "5s"), `tfhive: error: unexpected argument "5s"`},
		{[]string{"status", "--hosts", idZero, "--ssh-config", f.SSHConfig}, "tfhive: error: h1: identity file /dev/zero: not a regular file (a character device)\n"},
		{[]string{"status", "--hosts", f.HostsYAML, "--ssh-config", khFIFO}, "tfhive: error: h1: known_hosts: " + fifo + ": not a regular file (a FIFO)\n"},
		{[]string{"run", "--hosts", f.HostsYAML, "--ssh-config", khZero, "--", "true"}, "tfhive: error: h1: known_hosts: /dev/zero: not a regular file (a character device)\n"},
	} {
		r := tfhive(t, f.Env(), dir, c.args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, c.want) || strings.Count(r.stderr, "tfhive: error:") != 1 || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("h1 saw %d sessions from refused commands", n)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "known_hosts.") && !strings.HasPrefix(e.Name(), "ssh_config.") && e.Name() != "hosts-zero.yaml" {
			t.Errorf("a refused command left %s in its directory", e.Name())
		}
	}
}
