package supervisor

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the package's tests a HOME of their own: a supervisor
// started here (supervise) makes what it keeps under ~/.tfhive (a kept
// task's run directory, a task's stop-deadline directory), and the
// tester's own home is no place for that. Tests that look at the home
// set one of their own on top.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "supervisor-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	rc := m.Run()
	os.RemoveAll(home)
	os.Exit(rc)
}
