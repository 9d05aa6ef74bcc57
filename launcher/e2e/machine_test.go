package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// One machine under two names (here a second address of the same sshd)
// would have its GPUs booked twice: plan and run refuse it before
// planning, by what the host reports, not by its name.
func TestSameMachineUnderTwoNames(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "m1", GPU: "idle-2gpu.xml", ExtraListen: []string{"127.0.0.2"}})
	hosts := filepath.Join(f.Dir, "two-names.yaml")
	if err := os.WriteFile(hosts, []byte("hosts:\n  - address: m1\n  - address: 127.0.0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"plan", "run"} {
		args := []string{cmd, "--hosts", hosts, "--ssh-config", f.SSHConfig, "--workers", "4", "--", "true"}
		if cmd == "run" {
			args = append([]string{cmd, "--log-dir", filepath.Join(t.TempDir(), "logs")}, args[1:]...)
		}
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, 2)
		wantContains(t, cmd, r.stderr, "tfhive: error: m1 and 127.0.0.2 are the same machine")
	}
	// status shows both: looking is harmless.
	r := tfhive(t, f.Env(), f.Dir, "status", "--hosts", hosts, "--ssh-config", f.SSHConfig)
	wantCode(t, r, 0)
	if len(rowsOf(r.stdout, "m1")) != 2 || len(rowsOf(r.stdout, "127.0.0.2")) != 2 {
		t.Errorf("status:\n%s", r.stdout)
	}
}
