package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// addressConfig writes an ssh config for hosts written as 127.0.0.1:PORT
// (no alias): the fleet's client key, and knownHosts as known_hosts.
func addressConfig(t *testing.T, f *sshtest.Fleet, knownHosts string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	body := "Host 127.0.0.1\n  IdentityFile " + f.ClientKey + "\n  UserKnownHostsFile " + knownHosts + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// addressOf is the host as -H writes it: 127.0.0.1:PORT.
func addressOf(h *sshtest.Host) string { return h.Addr + ":" + itoa(h.Port) }

// Two sshds on one address (containers, forwarded ports) are two hosts,
// told apart by their ports wherever a host is named: status, plan (its
// tables and --json), --exclude, run's task prefixes and summary.
func TestHostNamesCarryTheirPort(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "a", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "b", GPU: "idle-2gpu.xml", AliveInterval: 1})
	a, b := f.Host("a"), f.Host("b")
	if a.Addr != b.Addr {
		t.Fatalf("the hosts listen on %s and %s, want one address", a.Addr, b.Addr)
	}
	names := []string{addressOf(a), addressOf(b)}
	slices.Sort(names)
	hosts := []string{"-H", strings.Join(names, ","), "--ssh-config", addressConfig(t, f, f.KnownHosts)}

	r := tfhive(t, f.Env(), f.Dir, append([]string{"status"}, hosts...)...)
	wantCode(t, r, 0)
	for _, n := range names {
		if rows := rowsOf(r.stdout, n); len(rows) != 2 || rows[0][5] != "free" {
			t.Errorf("status: %s has rows %q, want its 2 free GPUs\n%s", n, rows, r.stdout)
		}
	}

	r = tfhive(t, f.Env(), f.Dir, append([]string{"plan", "--workers", "2", "--gpus-per-worker", "2"}, append(hosts, "--", "true")...)...)
	wantCode(t, r, 0)
	for _, n := range names {
		if len(rowsOf(r.stdout, n)) == 0 {
			t.Errorf("plan: no row names %s\n%s", n, r.stdout)
		}
	}
	r = tfhive(t, f.Env(), f.Dir, append([]string{"plan", "--json", "--workers", "2", "--gpus-per-worker", "2"}, append(hosts, "--", "true")...)...)
	wantCode(t, r, 0)
	var plan schedule.Plan
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	var got []string
	for _, task := range plan.Tasks {
		got = append(got, task.Host)
	}
	if slices.Sort(got); !slices.Equal(got, names) {
		t.Errorf("plan --json: tasks on %q, want one on each of %q", got, names)
	}

	// --exclude names a host by its name, port and all.
	r = tfhive(t, f.Env(), f.Dir, append([]string{"plan", "--json", "--workers", "2", "--exclude", names[0]}, append(hosts, "--", "true")...)...)
	wantCode(t, r, 0)
	plan = schedule.Plan{}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan --json --exclude: %v\n%s", err, r.stdout)
	}
	for _, task := range plan.Tasks {
		if task.Host != names[1] {
			t.Errorf("--exclude %s: %s on %s", names[0], task.ID, task.Host)
		}
	}

	// A run's task prefixes and summary name the hosts the same way.
	logDir := filepath.Join(t.TempDir(), "logs")
	r = tfhive(t, f.Env(), f.Dir, append([]string{"run", "--log-dir", logDir, "--grace", "2s", "--workers", "2", "--gpus-per-worker", "2"},
		append(hosts, "--", "echo", "hello")...)...)
	wantCode(t, r, 0)
	got = nil
	for _, task := range summaryOf(t, logDir).Tasks {
		got = append(got, task.Host)
		wantContains(t, "stdout", r.stdout, "["+task.ID+" "+task.Host+"] hello")
	}
	if slices.Sort(got); !slices.Equal(got, names) {
		t.Errorf("summary: tasks on %q, want %q", got, names)
	}
}

// permanentlyAdded matches OpenSSH's line for a key it adds to known_hosts.
var permanentlyAdded = regexp.MustCompile(`(?m)^Warning: Permanently added '.*' \(.*\) to the list of known hosts\.$`)

// An unknown host's hint is an ssh command that reaches it (its port, the
// ssh config tfhive read); --accept-new-host-keys says what it adds as
// OpenSSH does, word for word, once per new host, and run -q does not.
func TestHostKeyHintAndPermanentlyAdded(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "n1", GPU: "idle-2gpu.xml", NotKnown: true},
		sshtest.Profile{Name: "n2", GPU: "idle-2gpu.xml", NotKnown: true})
	n1, n2 := f.Host("n1"), f.Host("n2")
	kh := filepath.Join(t.TempDir(), "known_hosts")
	cfg := addressConfig(t, f, kh)
	hosts := []string{"-H", addressOf(n1) + "," + addressOf(n2), "--ssh-config", cfg}

	r := tfhive(t, f.Env(), f.Dir, append([]string{"status"}, hosts...)...)
	wantCode(t, r, 4)
	hint := "`ssh -F " + cfg + " -p " + itoa(n1.Port) + " 127.0.0.1` once"
	wantContains(t, "stderr", r.stderr, addressOf(n1)+": host key unknown", hint,
		addressOf(n2)+": host key unknown", "`ssh -F "+cfg+" -p "+itoa(n2.Port)+" 127.0.0.1` once")

	// The hint's command works: OpenSSH reaches n1 with it and, told to
	// accept new keys, records n1's key and says so in its own words.
	var opensshSaid string
	if _, err := exec.LookPath("ssh"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ssh is required in CI (openssh-client)")
		}
		t.Log("no ssh here: the hint's command is not run")
	} else {
		cmd := strings.TrimSuffix(strings.TrimPrefix(hint, "`"), "` once")
		ssh := exec.Command("sh", "-c", cmd+" -o BatchMode=yes -o StrictHostKeyChecking=accept-new true")
		ssh.Env, ssh.Dir = f.Env(), f.Dir
		var errb bytes.Buffer
		ssh.Stderr = &errb
		if err := ssh.Run(); err != nil {
			t.Fatalf("the hint's command %q: %v\n%s", cmd, err, errb.String())
		}
		opensshSaid = permanentlyAdded.FindString(strings.ReplaceAll(errb.String(), "\r\n", "\n")) // its log lines end in CRLF
		if opensshSaid == "" {
			t.Fatalf("OpenSSH said no Permanently added line:\n%s", errb.String())
		}
	}

	// The hosts new to tfhive get one line each, OpenSSH's (n1, known
	// now, none).
	r = tfhive(t, f.Env(), f.Dir, append([]string{"status", "--accept-new-host-keys"}, hosts...)...)
	wantCode(t, r, 0)
	added := func(h *sshtest.Host) string {
		return "Warning: Permanently added '[127.0.0.1]:" + itoa(h.Port) + "' (ED25519) to the list of known hosts."
	}
	want := []string{added(n2)}
	if opensshSaid == "" {
		want = []string{added(n1), added(n2)}
	} else if opensshSaid != added(n1) {
		t.Errorf("OpenSSH says %q, tfhive would say %q", opensshSaid, added(n1))
	}
	said := permanentlyAdded.FindAllString(r.stderr, -1)
	if slices.Sort(said); !slices.Equal(said, want) {
		t.Errorf("tfhive said %q, want %q\n%s", said, want, r.stderr)
	}

	// Known now: nothing more is added or said.
	r = tfhive(t, f.Env(), f.Dir, append([]string{"status", "--accept-new-host-keys"}, hosts...)...)
	wantCode(t, r, 0)
	if said := permanentlyAdded.FindAllString(r.stderr, -1); len(said) != 0 {
		t.Errorf("the second time: said %q", said)
	}
	data, _ := os.ReadFile(kh)
	if n := strings.Count(string(data), "\n"); n != 2 {
		t.Errorf("known_hosts has %d lines, want 2:\n%s", n, data)
	}

	// run -q adds the key as ssh -q would: without a word.
	quiet := filepath.Join(t.TempDir(), "known_hosts")
	logDir := filepath.Join(t.TempDir(), "logs")
	r = tfhive(t, f.Env(), f.Dir, "run", "-q", "--accept-new-host-keys", "-H", addressOf(n1), "--ssh-config", addressConfig(t, f, quiet),
		"--log-dir", logDir, "--grace", "2s", "--workers", "1", "--gpus-per-worker", "0", "--", "true")
	wantCode(t, r, 0)
	if said := permanentlyAdded.FindAllString(r.stderr, -1); len(said) != 0 {
		t.Errorf("run -q said %q", said)
	}
	if data, _ := os.ReadFile(quiet); !strings.Contains(string(data), "[127.0.0.1]:"+itoa(n1.Port)+" ") {
		t.Errorf("run -q --accept-new-host-keys: known_hosts is\n%s", data)
	}
}
