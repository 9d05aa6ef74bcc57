package hostops

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// reserve.sh judges a name by its own owner (lstat), never by what a
// link points at: a link that another user planted in the claims dir,
// named as a reservation and pointing at one of ours, is not ours to
// unreserve, and nothing is removed through it.
func TestReserveShLinkIsItsOwnersNotTheTargets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a claims dir with two users' files needs root")
	}
	const me, other = 65534, 4242 // nobody runs the script; other planted the link
	dir := filepath.Join(t.TempDir(), "claims")
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // t.TempDir's are 0700
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "tfhive-reservation.0000000a.100.200.0.")
	link := filepath.Join(dir, "tfhive-reservation.0000000b.100.200.1.")
	if err := os.WriteFile(mine, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mine, me, me); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, other, other); err != nil {
		t.Fatal(err)
	}
	run := func(remove string) (int, string) {
		t.Helper()
		cmd := exec.Command("sh", "-s")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TFHIVE_CLAIMS_DIR=" + dir}
		cmd.Stdin = strings.NewReader(reserveSh.With(shscript.Set("tfhive_make", ""), shscript.Set("tfhive_remove", remove)))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: me, Gid: me, Groups: []uint32{}}}
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), errb.String()
	}
	if rc, msg := run(filepath.Base(link)); rc != 77 || !strings.Contains(msg, "is not ours: it is UNKNOWN (uid 4242)'s") {
		t.Errorf("unreserving another user's link to our file: exit %d, %q; want 77, not ours", rc, msg)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the other user's link went: %v", err)
	}
	if _, err := os.Lstat(mine); err != nil {
		t.Errorf("our file went through the link: %v", err)
	}
	if rc, msg := run(filepath.Base(mine)); rc != 0 {
		t.Errorf("unreserving our own file: exit %d, %q", rc, msg)
	}
	if _, err := os.Lstat(mine); !os.IsNotExist(err) {
		t.Errorf("our own file stayed: %v", err)
	}
}
