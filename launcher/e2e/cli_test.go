package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// The binary, not only Main: the exit status os.Exit gives and nothing
// from urfave/cli on either stream.
func TestCLIUnknownCommand(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"nosuch"}, "tfhive: error: unknown command \"nosuch\"\n"},
		{[]string{"statsu", "--json"}, "tfhive: error: unknown command \"statsu\"\ntfhive: hint: did you mean \"status\"?\n"},
		{[]string{"help", "nosuch"}, "tfhive: error: unknown command or guide \"nosuch\"\ntfhive: hint: `tfhive help` lists the commands and the guides\n"},
	} {
		r := tfhive(t, os.Environ(), dir, c.args...)
		wantCode(t, r, 2)
		if r.stderr != c.stderr || r.stdout != "" {
			t.Errorf("%q: stderr %q, want %q; stdout %q", c.args, r.stderr, c.stderr, r.stdout)
		}
	}
}

// With no host reachable there are no GPUs to count: exit 4 with each
// host's own reason, as status gives them, and no log dir left behind;
// usage, with no ledger to read, exits 4 the same way.
func TestCLIEveryHostUnreachable(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "nokey", GPU: "idle-2gpu.xml", NoAuthorized: true},
		sshtest.Profile{Name: "gone", GPU: "idle-2gpu.xml"},
	)
	f.Host("gone").Stop()
	logDir := filepath.Join(t.TempDir(), "logs")
	for _, args := range [][]string{
		{"plan", "--", "true"},
		{"run", "--log-dir", logDir, "--", "true"},
	} {
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, args...)...)
		wantCode(t, r, 4)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if len(lines) != 3 || lines[0] != "tfhive: error: 2 of 2 hosts could not be reached" {
			t.Errorf("%s: want the error and one line per host:\n%s", args[0], r.stderr)
		}
		wantContains(t, args[0]+" stderr", r.stderr, "tfhive:   nokey: authentication failed for user",
			"tfhive:   gone: connection refused")
		if strings.Contains(r.stderr, "not enough free GPUs") || r.stdout != "" {
			t.Errorf("%s: stdout %q, stderr:\n%s", args[0], r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Error("a run that started no task created its log dir")
	}
	// usage has no ledger to read: exit 4, each host named once, with its
	// reason (not also as a warning).
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "usage")...)
	wantCode(t, r, 4)
	wantContains(t, "usage stderr", r.stderr, "tfhive: error: 2 of 2 hosts could not be reached",
		"tfhive:   nokey: authentication failed for user", "tfhive:   gone: connection refused")
	if strings.Count(r.stderr, "gone:") != 1 {
		t.Errorf("usage: a host named twice:\n%s", r.stderr)
	}
}

// A log dir run cannot use is refused before any host is probed, the
// default one (tfhive-runs/RUN_ID) included.
func TestCLIBadLogDirProbesNoHost(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml"})
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "tfhive-runs"), nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--log-dir", file, "--", "true"}, "tfhive: error: log dir " + file + " is not a directory\n"},
		{[]string{"run", "--log-dir", filepath.Join(file, "logs"), "--", "true"}, "tfhive: error: log dir " + file + "/logs cannot be created: " + file + " is not a directory\n"},
		{[]string{"run", "--name", "r1", "--", "true"}, "tfhive: error: log dir tfhive-runs/r1 cannot be created: tfhive-runs is not a directory\n"},
	} {
		r := tfhive(t, f.Env(), dir, fleetArgs(f, c.args...)...)
		wantCode(t, r, 2)
		if !strings.HasPrefix(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 2 {
			t.Errorf("%q: stderr %q, want %q and a hint", c.args, r.stderr, c.want)
		}
	}
	if n := f.Host("h1").SMICalls(); n != 0 {
		t.Errorf("h1 was probed %d times although the log dir was refused", n)
	}
}
