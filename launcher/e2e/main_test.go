// Package e2e runs the real tfhive binary against real sshd test hosts
// (probe/sshtest). In CI (CI=true) these tests never skip. It drives tfhive
// only through the binary: from tfhive it imports probe/sshtest and
// exported constants and types, never main or launcher/commands.
package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

var tfhiveBin, trainerBin string

// raceEnv, set to 1 under go test -race, builds the tfhive binary the
// tests run with -race too.
const raceEnv = "TFHIVE_E2E_RACE"

func TestMain(m *testing.M) {
	if to := os.Getenv(rssEnv); to != "" {
		os.Exit(reportRSS(to, os.Args[1:]))
	}
	progressDone := startProgress()
	// The parallel tests spend their time waiting on timers (keepalives,
	// --grace, --reconnect: testing.md), not on the CPU: more of them at
	// once than the 2 cores' default, unless -parallel says otherwise.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		flag.Set("test.parallel", "4")
	}
	dir, err := os.MkdirTemp("", "tfhive-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Separate test hosts see the binaries behind their private /tmp, as a
	// lab's hosts see the programs a user installed.
	sshtest.KeepVisible(dir)
	tfhiveBin = filepath.Join(dir, "tfhive")
	args := []string{"build", "-o", tfhiveBin}
	// The tfhive the tests run is race-built only when asked (and the
	// tests themselves run under -race): it makes every run of it about
	// twice as slow, which doubled the package's time (15 min against 8
	// on 2 cores, and the private-homes pass's 5 against 10). tfhive's
	// code runs under -race in its in-process tests (launcher/commands'
	// fake hosts drive run, ps, kill, queue, wait, logs, attach end to
	// end; probe/transport's own sshd); ask for it here before a change
	// to what runs concurrently across sessions.
	if raceEnabled && os.Getenv(raceEnv) == "1" {
		args = append(args, "-race")
	}
	trainerBin = filepath.Join(dir, "trainer")
	for _, b := range [][]string{append(args, "."), {"build", "-o", trainerBin, "./testdata/trainer"}} {
		build := exec.Command("go", b...)
		build.Dir = sshtest.RepoRoot()
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "go", strings.Join(b, " "), err)
			os.Exit(1)
		}
	}
	code := m.Run()
	progressDone()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// tfhive runs the binary in dir with env and returns what it printed.
func tfhive(t *testing.T, env []string, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tfhiveBin, args...)
	cmd.Env, cmd.Dir = env, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running tfhive: %v", err)
	}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "DATA RACE") {
		t.Fatalf("tfhive crashed or raced:\n%s", r.stderr)
	}
	return r
}

// fleetArgs point tfhive at the fleet's own hosts file and ssh_config.
func fleetArgs(f *sshtest.Fleet, args ...string) []string {
	return append([]string{args[0], "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig}, args[1:]...)
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func wantContains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// rowsOf returns the table rows (split on runs of 2+ spaces) whose first
// column is host: a row is one line, on a terminal or not (a line that
// starts blank is none of its host's).
func rowsOf(table, host string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(table, "\n") {
		if cols := splitCols(line); len(cols) > 0 && !strings.HasPrefix(line, " ") && cols[0] == host {
			rows = append(rows, cols)
		}
	}
	return rows
}

func splitCols(line string) []string {
	var cols []string
	for _, c := range strings.Split(line, "  ") {
		if c = strings.TrimSpace(c); c != "" {
			cols = append(cols, c)
		}
	}
	return cols
}
