package commands

import (
	"bytes"
	"context"
	"math"
	"runtime/debug"
	"testing"
	"time"
)

// status sets a soft memory limit that grows with the hosts, unless
// GOMEMLIMIT says otherwise: the runtime reads that itself.
func TestStatusMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Chdir(dir)
	was := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	status := func() {
		var out, errb bytes.Buffer
		// The hosts refuse connections: the limit is set before they are
		// dialled.
		hosts := HostOptions{Hosts: []string{"127.0.0.1:1,127.0.0.2:1,127.0.0.3:1"}, ConnectTimeout: time.Second, CommandTimeout: time.Second, Parallel: 4}
		Status(context.Background(), StatusOptions{Streams: Streams{Stdout: &out, Stderr: &errb}, Hosts: hosts})
	}
	t.Setenv("GOMEMLIMIT", "")
	status()
	if got, want := debug.SetMemoryLimit(-1), int64(28<<20+3*96<<10); got != want {
		t.Errorf("memory limit for 3 hosts: %d, want %d", got, want)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	status()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set, yet status set the limit to %d", got)
	}
}
