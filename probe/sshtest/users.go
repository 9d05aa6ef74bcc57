package sshtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// accountsMu serialises this process's useradd and userdel.
var accountsMu sync.Mutex

// accounts runs useradd or userdel, one at a time in this process, and
// again while another process (another test binary, the machine's own
// tools) holds the lock on /etc/passwd or /etc/group: shadow's tools give
// up at once when they cannot take it. 10 s in all at most.
func accounts(tool string, args ...string) ([]byte, error) {
	accountsMu.Lock()
	defer accountsMu.Unlock()
	for delay := 10 * time.Millisecond; ; delay *= 2 {
		out, err := exec.Command(tool, args...).CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("lock")) || delay > 5*time.Second {
			return out, err
		}
		time.Sleep(delay)
	}
}

// User is a real local Unix user made for one test: another person on a
// shared GPU host, a colleague or a hostile one.
type User struct {
	Name     string
	UID, GID int
	Home     string
}

// RequireUsers fails (in CI) or skips (elsewhere) unless local users can be
// made: that takes root and useradd.
func RequireUsers(t testing.TB) {
	t.Helper()
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "making local users needs root"
	case sbin("useradd") == "" || sbin("userdel") == "":
		why = "useradd and userdel are missing (apt-get install -y passwd)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// sbin finds an administration tool even when the test's PATH lacks the
// sbin directories, as a non-login root shell's PATH may.
func sbin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		if _, err := os.Stat(d + "/" + name); err == nil {
			return d + "/" + name
		}
	}
	return ""
}

// AddUser makes a local user with a home directory and bash as its shell,
// named "th", 6 random hex digits, "-" and as much of role as fits in 32
// characters (ps -o user:32 must show the whole name). At test end every
// process of the user is killed and the user removed with its home.
func AddUser(t testing.TB, role string) *User {
	t.Helper()
	RequireUsers(t)
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	name := "th" + hex.EncodeToString(rnd[:]) + "-" + userRole(role)
	name = strings.TrimSuffix(name[:min(len(name), 32)], "-")

	// The password "*" instead of useradd's "!": with UsePAM no, sshd
	// refuses an account whose password is locked, even for key logins.
	// One useradd or userdel at a time from this process: parallel tests
	// would otherwise meet each other's lock on /etc/passwd and fail.
	out, err := accounts(sbin("useradd"), "--create-home", "--shell", "/bin/bash", "--user-group",
		"--password", "*", "--comment", "tfhive sshtest", name)
	if err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	// The reaper removes the user, with its processes, should the test
	// die before its cleanups (lifeline.go).
	untie, err := tie("user", name)
	t.Cleanup(func() {
		removeUser(t, name)
		untie()
	})
	if err != nil {
		t.Fatal(err)
	}

	pw, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	u := &User{Name: name, Home: pw.HomeDir}
	if u.UID, err = strconv.Atoi(pw.Uid); err != nil {
		t.Fatal(err)
	}
	if u.GID, err = strconv.Atoi(pw.Gid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { userRemoved(name) })
	if err := userAdded(u); err != nil {
		t.Fatal(err)
	}
	return u
}

// userRole keeps what a user name may hold.
func userRole(role string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(role) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// removeUser kills the user's processes, then removes the user. The kill is
// kill(-1) made as the user: the kernel signals all of the user's
// processes in one pass, so none forks away between a listing and its
// kill, as with pkill.
func removeUser(t testing.TB, name string) {
	t.Helper()
	pw, err := user.Lookup(name)
	if err == nil {
		uid, _ := strconv.Atoi(pw.Uid)
		gid, _ := strconv.Atoi(pw.Gid)
		k := exec.Command("/bin/sh", "-c", "kill -9 -1")
		k.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		k.Run() // killed along with the rest
	}
	// -f: processes killed just now may not all have exited yet.
	out, err := accounts(sbin("userdel"), "-f", "-r", name)
	if err != nil {
		t.Errorf("userdel %s: %v\n%s", name, err, out)
	}
}

// Command runs a program on this machine as the user, in its home
// directory, with a login's HOME, USER, LOGNAME and PATH and nothing else
// of the test's environment.
func (u *User) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = u.Home
	cmd.Env = []string{"HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name,
		"PATH=/usr/local/bin:/usr/bin:/bin", "SHELL=/bin/bash"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
		Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{},
	}}
	return cmd
}
