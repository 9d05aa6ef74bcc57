package sshtest_test

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// Two local users log in to a shared fleet with its client key and use the
// host as their own: their names, the fake nvidia-smi, the claims
// directory.
func TestUsersOnSharedFleet(t *testing.T) {
	sshtest.RequireUsers(t)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "shared", GPU: "idle-2gpu.xml"})
	h := f.Host("shared")
	alice, mallory := sshtest.AddUser(t, "alice"), sshtest.AddUser(t, "hostile-colleague")
	if alice.Name == mallory.Name {
		t.Fatalf("two users named %s", alice.Name)
	}
	for _, u := range []*sshtest.User{alice, mallory} {
		if len(u.Name) > 32 || !strings.HasPrefix(u.Name, "th") {
			t.Errorf("user name %q", u.Name)
		}
		out := sshAs(t, f, u.Name, "shared", "id -un; echo $HOME; nvidia-smi -q -x")
		name, out, _ := strings.Cut(out, "\n")
		home, xml, _ := strings.Cut(out, "\n")
		if name != u.Name {
			t.Errorf("logged in as %s, id -un says %q", u.Name, name)
		}
		if home != u.Home {
			t.Errorf("%s's HOME is %q, want their own %s", u.Name, home, u.Home)
		}
		if got := uuids(xml); len(got) != 2 {
			t.Errorf("%s's nvidia-smi: %d GPU UUIDs:\n%s", u.Name, len(got), xml)
		}
	}
	if n := h.SMICalls(); n != 2 {
		t.Errorf("nvidia-smi calls logged: %d, want 2", n)
	}

	lock := filepath.Join(h.ClaimsDir(), "gpu0.lock")
	if out, err := mallory.Command("touch", lock).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot write in the claims dir: %v\n%s", mallory.Name, err, out)
	}
	if fi, err := os.Stat(lock); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != mallory.UID {
		t.Errorf("the lock file made by %s: %v %v", mallory.Name, fi, err)
	}

	path := f.HostsYAMLAs(t, alice)
	hosts, err := hosts.Load(hosts.Options{File: path, SSHConfig: f.SSHConfig, Home: f.Home, LocalUser: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 1 || hosts[0].User != alice.Name || hosts[0].Port != h.Port {
		t.Errorf("%s resolves to %+v", path, hosts)
	}
}

// User.Command runs as the user, and the user's processes die with it.
func TestUserCommand(t *testing.T) {
	sshtest.RequireUsers(t)
	var (
		u     *sshtest.User
		sleep *exec.Cmd
	)
	t.Run("user", func(t *testing.T) {
		u = sshtest.AddUser(t, "Role With Spaces, and a very long name beyond 32")
		if !regexp.MustCompile(`^th[0-9a-f]{6}-rolewithspacesandaveryl$`).MatchString(u.Name) {
			t.Errorf("user name %q", u.Name)
		}
		out, err := u.Command("sh", "-c", "id -un; pwd; echo $HOME").Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := u.Name + "\n" + u.Home + "\n" + u.Home + "\n"; string(out) != want {
			t.Errorf("as the user: %q, want %q", out, want)
		}
		sleep = u.Command("sleep", "1000")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat("/proc/" + strconv.Itoa(sleep.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != u.UID {
			t.Errorf("the process runs as uid %d, want %d", uid, u.UID)
		}
	})
	if sleep == nil || sleep.Process == nil {
		return
	}
	exited := make(chan error, 1)
	go func() { exited <- sleep.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		sleep.Process.Kill()
		t.Error("the user's process outlived the user")
	}
	if _, err := user.Lookup(u.Name); err == nil {
		t.Errorf("user %s still exists", u.Name)
	}
	if _, err := os.Stat(u.Home); !os.IsNotExist(err) {
		t.Errorf("home %s still there: %v", u.Home, err)
	}
}
