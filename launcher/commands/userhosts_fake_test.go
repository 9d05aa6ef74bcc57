package commands

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/probe/hosttest"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// From a directory without hosts.yaml, the per-user hosts file
// ($XDG_CONFIG_HOME/tfhive/hosts.yaml) gives the hosts, and status, ps,
// run and kill say so on stderr or in their first line; stdout of --json
// stays one document. ./hosts.yaml, when there, wins; with neither, the
// hosts are this machine, and that is said too.
func TestUserHostsFileOnFakeHosts(t *testing.T) {
	f := hosttest.Start(t, hosttest.Profile{Name: "a", GPUs: 2}, hosttest.Profile{Name: "b", GPUs: 2})
	home, xdg, empty := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("TFHIVE_HOSTS", "")
	t.Chdir(empty)
	conf := filepath.Join(xdg, "tfhive")
	// The tasks run as this user: kill stops only the user's own runs.
	me := hostops.LocalUser()
	writeFile(t, conf, "lab_ssh_config", "Host a b\n  Port 2222\n  User "+me+"\n")
	writeFile(t, conf, "hosts.yaml", "ssh_config: lab_ssh_config\nhosts: [a, b]\n")
	h := HostOptions{ConnectTimeout: 5 * time.Second, CommandTimeout: 10 * time.Second, Parallel: 8, Dial: f.Dial}
	const note = "tfhive: hosts from " // then the file, under a home that is not the test's

	var s out
	if err := Status(context.Background(), StatusOptions{Streams: s.streams(), Hosts: h}); err != nil {
		t.Fatalf("status: %v\n%s", err, s.stderr.String())
	}
	if got := s.stderr.String(); got != note+filepath.Join(conf, "hosts.yaml")+"\n" {
		t.Errorf("status's stderr: %q", got)
	}
	contains(t, "status", s.stdout.String(), "\na ", "\nb ")
	var sj out
	if err := Status(context.Background(), StatusOptions{Streams: sj.streams(), Hosts: h, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(sj.stdout.Bytes(), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, sj.stdout.String())
	}

	// The ssh config is the file's: its Port applies.
	fleet, err := openFleet(h, io.Discard, probeClaims)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range fleet.Hosts {
		if host.Port != 2222 || host.User != me {
			t.Errorf("%s: %s port %d, want the file's ssh config's %s port 2222", host.Name, host.User, host.Port, me)
		}
	}

	marks := t.TempDir()
	var r syncOut
	j := fakeJob("mine", 2, `touch `+marks+`/$TFHIVE_TASK; exec sleep 60`)
	ro := RunOptions{Streams: r.streams(), Hosts: h, Job: j, LogDir: filepath.Join(empty, "logs", "mine"),
		Grace: 2 * time.Second, Reconnect: DefaultReconnect}
	stop, wait := background(func(ctx context.Context) error { return Run(ctx, ro) })
	defer stop()
	eventually(t, "both workers start", func() bool {
		es, _ := os.ReadDir(marks)
		return len(es) == 2
	})
	eventuallySaying(t, "run's first line names the hosts file", func() bool {
		return strings.Contains(r.String(), "tfhive: run mine: 2 tasks on 2 hosts (hosts from "+filepath.Join(conf, "hosts.yaml")+"), logs in ")
	}, r.String)

	var ps out
	if err := Ps(context.Background(), PsOptions{Streams: ps.streams(), Hosts: h}); err != nil {
		t.Fatalf("ps: %v", err)
	}
	contains(t, "ps", ps.stdout.String(), "mine", "worker:0", "worker:1")
	contains(t, "ps's stderr", ps.stderr.String(), note)

	var k out
	err = Kill(context.Background(), KillOptions{Streams: k.streams(), Hosts: h, RunID: "nothere"})
	if err == nil || err.Error() != "no run nothere holds GPUs or ports on these hosts (hosts from "+filepath.Join(conf, "hosts.yaml")+")" {
		t.Errorf("kill of no run: %v", err)
	}
	k = out{}
	if err := Kill(context.Background(), KillOptions{Streams: k.streams(), Hosts: h, RunID: "mine", Grace: 2 * time.Second}); err != nil {
		t.Fatalf("kill: %v\n%s", err, k.stderr.String())
	}
	// The run stops its other task once one is killed: that one may
	// have ended by the time kill reaches its host.
	contains(t, "kill", k.stdout.String(), "stopped run mine on ")
	errAs[*RunFailedError](t, wait())

	// ./hosts.yaml wins over the user's; -H picks hosts, ./hosts.yaml
	// lending its settings, and says so; -H with --hosts is the command
	// line: no word.
	writeFile(t, empty, "hosts.yaml", "hosts: [b]\n")
	if got := hostsFrom(h); got != "hosts from ./hosts.yaml" {
		t.Errorf("with ./hosts.yaml: %q", got)
	}
	if got := hostsFrom(HostOptions{Hosts: []string{"a"}}); got != "hosts from -H, their settings from ./hosts.yaml" {
		t.Errorf("with -H: %q", got)
	}
	if got := hostsFrom(HostOptions{Hosts: []string{"a"}, File: filepath.Join(empty, "hosts.yaml")}); got != "" {
		t.Errorf("with -H and --hosts: %q", got)
	}
	t.Setenv("TFHIVE_HOSTS", filepath.Join(conf, "hosts.yaml"))
	if got := hostsFrom(HostOptions{File: filepath.Join(conf, "hosts.yaml")}); got != "hosts from $TFHIVE_HOSTS ("+filepath.Join(conf, "hosts.yaml")+")" {
		t.Errorf("with $TFHIVE_HOSTS: %q", got)
	}
	t.Setenv("TFHIVE_HOSTS", "")
	os.Remove(filepath.Join(empty, "hosts.yaml"))
	// Neither: this machine, said so.
	t.Setenv("XDG_CONFIG_HOME", "")
	var l out
	if err := Status(context.Background(), StatusOptions{Streams: l.streams(), Hosts: h}); err != nil {
		t.Fatalf("status: %v", err)
	}
	if got := l.stderr.String(); got != "tfhive: no hosts given: this machine, without SSH\n" {
		t.Errorf("status on this machine, stderr: %q", got)
	}
}

// A per-user hosts file that cannot be used stops the command before any
// host is dialled, with one line.
func TestUserHostsFileRefused(t *testing.T) {
	f := hosttest.Start(t, hosttest.Profile{Name: "a", GPUs: 1})
	home, empty := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("TFHIVE_HOSTS", "")
	t.Chdir(empty)
	conf := filepath.Join(home, ".config", "tfhive")
	os.MkdirAll(conf, 0o700)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, filepath.Join(conf, "hosts.yaml"))
	h := HostOptions{ConnectTimeout: 5 * time.Second, CommandTimeout: 10 * time.Second, Parallel: 8, Dial: f.Dial}
	var s out
	err := Status(context.Background(), StatusOptions{Streams: s.streams(), Hosts: h})
	want := "hosts file: " + filepath.Join(conf, "hosts.yaml") + ": not a regular file (a FIFO)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	if f.Hosts[0].Dials() != 0 {
		t.Error("a host was dialled")
	}
}
