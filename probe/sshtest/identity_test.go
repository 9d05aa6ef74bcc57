package sshtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// sshAs runs a command on a fake host as login through the system ssh
// client, with the fleet's ssh_config and strict host key checking against
// its known_hosts only.
func sshAs(t *testing.T, f *sshtest.Fleet, login, host, command string) string {
	t.Helper()
	bin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the ssh client is required in CI: apt-get install -y openssh-client")
		}
		t.Skip("no ssh client")
	}
	cmd := exec.Command(bin, "-F", f.SSHConfig, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", "GlobalKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes", "-l", login, host, command)
	cmd.Env = f.Env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ssh %s@%s %q: %v\n%s", login, host, command, err, stderr.String())
	}
	return string(out)
}

var uuidRE = regexp.MustCompile(`<uuid>(GPU-[^<]*)</uuid>`)

func uuids(s string) []string {
	var out []string
	for _, m := range uuidRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Hosts serving one capture report GPUs of their own, unless one is the
// other under a second name; an extra listen address is the same sshd.
func TestGPUIdentity(t *testing.T) {
	f := sshtest.Start(t,
		sshtest.Profile{Name: "a", GPU: "idle-2gpu.xml", ExtraListen: []string{"127.0.0.2"}},
		sshtest.Profile{Name: "b", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "a-again", GPU: "mig.xml", SameMachineAs: "a"},
	)
	served := map[string][]string{}
	for _, h := range f.Hosts {
		data, err := os.ReadFile(filepath.Join(h.Dir, "gpu", "output"))
		if err != nil {
			t.Fatal(err)
		}
		served[h.Name] = uuids(string(data))
	}
	shape := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for name, us := range served {
		if len(us) != 2 || us[0] == us[1] {
			t.Errorf("%s serves UUIDs %q", name, us)
		}
		for _, u := range us {
			if !shape.MatchString(u) {
				t.Errorf("%s: UUID %q", name, u)
			}
		}
	}
	for _, u := range served["a"] {
		if slices.Contains(served["b"], u) {
			t.Errorf("a and b both report %s", u)
		}
	}
	if !slices.Equal(served["a"], served["a-again"]) {
		t.Errorf("a-again is a, but reports %q, not %q", served["a-again"], served["a"])
	}
	if a, again := f.Host("a").ClaimsDir(), f.Host("a-again").ClaimsDir(); a != again {
		t.Errorf("a-again is a, but has claims dir %s, not %s", again, a)
	}

	a := f.Host("a")
	if !slices.Equal(a.ExtraAddrs, []string{"127.0.0.2"}) {
		t.Fatalf("ExtraAddrs %q", a.ExtraAddrs)
	}
	login := os.Getenv("USER")
	if login == "" {
		login = "root"
	}
	for _, name := range []string{"a", "127.0.0.2"} {
		out := sshAs(t, f, login, name, `echo "$TFHIVE_FAKE_GPU $SSH_CONNECTION"`)
		fields := strings.Fields(out)
		if len(fields) != 5 || fields[0] != filepath.Join(a.Dir, "gpu") || fields[4] != strconv.Itoa(a.Port) {
			t.Errorf("ssh %s reached %q, want host a's sshd at port %d", name, out, a.Port)
		}
		if want := map[string]string{"a": a.Addr, "127.0.0.2": "127.0.0.2"}[name]; len(fields) == 5 && fields[3] != want {
			t.Errorf("ssh %s reached address %s, want %s", name, fields[3], want)
		}
	}
}
