package sshtest_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// Separate hosts share no process table, /proc/locks, /tmp, machine-id or
// hostname with each other or with the test; their users' homes are one
// (SharedHome) or each host's own (PrivateHomes). The fleet's files and the
// kept directories stay visible behind the private /tmp.
func TestSeparateHosts(t *testing.T) {
	sshtest.RequireUsers(t)
	kept := t.TempDir()
	if err := os.WriteFile(filepath.Join(kept, "tool"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sshtest.KeepVisible(kept)
	mine, err := os.ReadFile("/etc/machine-id")
	if err != nil {
		t.Fatal(err)
	}
	myHost, _ := os.Hostname()
	for _, bed := range []sshtest.Bed{sshtest.SharedHome, sshtest.PrivateHomes, sshtest.PrivateClones} {
		t.Run(bed.String(), func(t *testing.T) {
			private := bed != sshtest.SharedHome
			f := sshtest.StartSharedOn(t, bed, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml"},
				sshtest.Profile{Name: "h2", GPU: "idle-2gpu.xml"})
			alice := sshtest.AddUser(t, "alice")
			// A lock held on each host, a file in each /tmp, a line in
			// each user's home.
			probe := `flock -n /tmp/l sleep 60 >/dev/null 2>&1 & i=0; until grep -q FLOCK /proc/locks || [ $i -gt 1000 ]; do i=$((i+1)); sleep 0.01; done; echo pid $$; cat /etc/machine-id; hostname; ` +
				`echo "$(hostname)" >/tmp/mine; echo $(ls /tmp); cat /proc/locks | wc -l; ps -e -o pid= | wc -l; ` +
				`cat ` + filepath.Join(kept, "tool") + `; echo "$(hostname)" >>~/homes`
			seen := map[string][]string{}
			for _, h := range []string{"h1", "h2"} {
				out := sshAs(t, f, currentLogin(), h, probe)
				seen[h] = strings.Split(strings.TrimSpace(out), "\n")
				sshAs(t, f, alice.Name, h, `echo "$(hostname)" >>~/homes`)
			}
			for _, h := range []string{"h1", "h2"} {
				l := seen[h]
				if len(l) != 7 {
					t.Fatalf("%s said %q", h, l)
				}
				if pid, _ := strconv.Atoi(strings.TrimPrefix(l[0], "pid ")); pid <= 1 || pid > 1000 {
					t.Errorf("%s: the session's shell is pid %s in its namespace, want a small one", h, l[0])
				}
				if l[1] == strings.TrimSpace(string(mine)) || len(l[1]) != 32 {
					t.Errorf("%s: machine-id %q, the test's is %q", h, l[1], mine)
				}
				if l[2] != h || l[2] == myHost {
					t.Errorf("%s: hostname %q", h, l[2])
				}
				if !strings.Contains(l[3], "mine") || strings.Contains(l[3], "tfhive-e2e") {
					t.Errorf("%s: /tmp holds %q, want its own files and the kept ones only", h, l[3])
				}
				if n, _ := strconv.Atoi(l[4]); n != 1 {
					t.Errorf("%s: /proc/locks has %s lines, want the host's one", h, l[4])
				}
				if n, _ := strconv.Atoi(l[5]); n > 20 {
					t.Errorf("%s: ps lists %d processes: the machine's, not the host's", h, n)
				}
				if l[6] != "kept" {
					t.Errorf("%s: the kept directory reads %q", h, l[6])
				}
			}
			if clones := bed == sshtest.PrivateClones; (seen["h1"][1] == seen["h2"][1]) != clones {
				t.Errorf("machine-ids %s and %s; want one only for clones (%v)", seen["h1"][1], seen["h2"][1], clones)
			}
			if _, err := os.Stat("/tmp/mine"); err == nil {
				t.Errorf("a host's /tmp/mine is in the test's /tmp")
			}
			for _, who := range []struct {
				name, home string
			}{{"the test user", ""}, {alice.Name, alice.Home}} {
				homes := map[string]string{}
				for _, h := range []string{"h1", "h2"} {
					login := currentLogin()
					if who.home != "" {
						login = who.name
					}
					homes[h] = sshAs(t, f, login, h, "cat ~/homes")
				}
				want := map[string]string{"h1": "h1\nh2\n", "h2": "h1\nh2\n"}
				if private {
					want = map[string]string{"h1": "h1\n", "h2": "h2\n"}
				}
				for h, w := range want {
					if homes[h] != w {
						t.Errorf("%s's ~/homes on %s: %q, want %q", who.name, h, homes[h], w)
					}
				}
			}
			// A colleague's program on the host: in its namespaces, as her,
			// in her home there.
			out, err := f.Host("h2").Command(alice, "/bin/sh", "-c", "id -un; pwd; hostname; cat ~/homes").CombinedOutput()
			if want := alice.Name + "\n" + alice.Home + "\nh2\n" + map[bool]string{true: "h2\n", false: "h1\nh2\n"}[private]; err != nil || string(out) != want {
				t.Errorf("Command as %s on h2: %q (%v), want %q", alice.Name, out, err, want)
			}
			if bed == sshtest.SharedHome && f.Host("h1").Home() != f.Host("h2").Home() {
				t.Errorf("shared home: Home() %s and %s", f.Host("h1").Home(), f.Host("h2").Home())
			}
			// A host's power-off takes every process of it.
			h1 := f.Host("h1")
			init, err := h1.InitPID()
			if err != nil {
				t.Fatal(err)
			}
			h1.Stop()
			if stat, err := os.ReadFile("/proc/" + strconv.Itoa(init) + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
				t.Errorf("h1's PID 1 (%d) outlived the host: %s", init, stat)
			}
			if l := h1.Leftovers(); len(l) != 0 {
				t.Errorf("h1 left %q", l)
			}
		})
	}
}

func currentLogin() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}
