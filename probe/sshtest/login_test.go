package sshtest

import (
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// A LoginCPU host's login shell burns about that much CPU, once per
// session, and Sessions counts the sessions.
func TestLoginCPU(t *testing.T) {
	f := Start(t, Profile{Name: "slow", LoginCPU: 200 * time.Millisecond})
	for i := range 2 {
		c := exec.Command("ssh", "-F", f.SSHConfig, "-o", "BatchMode=yes", "slow", "true")
		c.Env = f.Env()
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("ssh: %v\n%s", err, out)
		}
		if got := f.Host("slow").Sessions(); got != i+1 {
			t.Errorf("after %d sessions Sessions() = %d", i+1, got)
		}
	}
	// The login shells are sshd's children, not ours: their CPU shows in
	// the machine's, so ask bash itself through one more session.
	c := exec.Command("ssh", "-F", f.SSHConfig, "-o", "BatchMode=yes", "slow", `read -r -a s </proc/$$/stat; echo $((s[13] + s[14]))`)
	c.Env = f.Env()
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	var ticks int
	if _, err := fmt.Sscan(string(out), &ticks); err != nil || ticks < 20 {
		t.Errorf("the login shell used %q ticks of CPU, want at least 20 (200 ms)", out)
	}
}
