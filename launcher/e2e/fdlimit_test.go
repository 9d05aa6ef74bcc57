package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A client out of file descriptors says so, once, with the limit and
// the fix, and ends; it never hangs. The limit is set in a shell that
// then execs tfhive (soft and hard: Go raises the soft one to the hard
// at start, as OpenSSH users expect of a client that dials many hosts).
func TestStatusOutOfDescriptors(t *testing.T) {
	f := sshtest.AnsweringHosts(t, "a", 64, 0, sshtest.Profile{Name: "source", GPU: "idle-2gpu.xml"})
	hosts := filepath.Join(f.Dir, "hosts.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -n 24 && exec "$0" "$@"`, tfhiveBin, "status", "--hosts", hosts, "--ssh-config", f.SSHConfig)
	cmd.Env = f.Env()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tfhive status hung out of file descriptors; stderr:\n%s", stderr.String())
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1", err)
	}
	want := "tfhive: error: out of file descriptors reaching 64 hosts: the limit is 24 open files (ulimit -n)\n" +
		"tfhive: hint: raise it with ulimit -n 1024 (the hard limit too: ulimit -Hn, or limits.conf)\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
	if stdout.String() != "" {
		t.Errorf("a table printed although the probe failed:\n%s", stdout.String())
	}
}
