package sshtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A host whose Profile names an interface capture serves it as `ip -o
// addr show`, and only that; the others keep the machine's own ip.
func TestFakeIP(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "a", NIC: "fleet-a.txt"}, sshtest.Profile{Name: "b"})
	want, err := os.ReadFile(filepath.Join(sshtest.RepoRoot(), "testdata", "nic", "fleet-a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	login := os.Getenv("USER")
	if login == "" {
		login = "root"
	}
	if got := sshAs(t, f, login, "a", "ip -o addr show"); got != string(want) {
		t.Errorf("a's ip -o addr show:\n%s\nwant fleet-a.txt:\n%s", got, want)
	}
	if got := sshAs(t, f, login, "a", "ip -o link show 2>&1; echo rc=$?"); !strings.Contains(got, "only '-o addr show' is served") || !strings.HasSuffix(got, "rc=2\n") {
		t.Errorf("a's ip -o link show: %q, want a refusal", got)
	}
	// The test user's sessions get the host's own empty HOME, not the
	// machine's rc files.
	if got, want := sshAs(t, f, login, "b", "echo $HOME"), f.Host("b").Home()+"\n"; got != want {
		t.Errorf("b's HOME: %q, want %q", got, want)
	}
	if got := sshAs(t, f, login, "b", "command -v ip || echo none"); strings.HasPrefix(got, f.Host("b").Dir) {
		t.Errorf("b runs the fake ip (%s) without a capture", got)
	}
}
