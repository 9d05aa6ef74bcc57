package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/probe/testkit"
)

// busyCommands name the other users' processes on gpu-busy, in the order
// of their pids in busy-4gpu.xml.
var busyCommands = []string{"python train.py --lr 0.1", "python3.11 -m torch.distributed.run", "ray::RolloutWorker.sample(batch=512, envs=8)"}

func mixedFleet(t *testing.T) *sshtest.Fleet {
	return sshtest.Start(t,
		sshtest.Profile{Name: "gpu-idle", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "gpu-busy", GPU: "busy-4gpu.xml", BusyPIDs: busyCommands, Hashed: true},
		sshtest.Profile{Name: "gpu-na", GPU: "na-fields.xml"},
		sshtest.Profile{Name: "gpu-mig", GPU: "mig.xml"},
		sshtest.Profile{Name: "gpu-nodriver", GPU: "driver-failed.txt", GPUExit: 9},
		sshtest.Profile{Name: "cpu-only"},
	)
}

func TestStatusMixedFleet(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := mixedFleet(t)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 0)

	idle := rowsOf(r.stdout, "gpu-idle")
	if len(idle) != 2 {
		t.Fatalf("gpu-idle: want 2 GPU rows, got %v\n%s", idle, r.stdout)
	}
	for _, row := range idle {
		if row[5] != "free" || !strings.HasPrefix(row[2], "NVIDIA A100") {
			t.Errorf("gpu-idle row %v: want a free A100", row)
		}
	}

	busy := rowsOf(r.stdout, "gpu-busy")
	if len(busy) != 4 {
		t.Fatalf("gpu-busy: want 4 rows, got %v", busy)
	}
	owner := "nobody"
	if os.Geteuid() != 0 {
		owner = os.Getenv("USER")
	}
	h := f.Host("gpu-busy")
	wantState := []string{"free", "busy", "busy", "busy"}
	for i, row := range busy {
		if row[5] != wantState[i] {
			t.Errorf("gpu-busy GPU %d: state %q, want %q (row %v)", i, row[5], wantState[i], row)
		}
	}
	wantContains(t, "gpu-busy GPU 1", strings.Join(busy[1], " "), owner+":"+itoa(h.Busy[0])+" python train.py")
	wantContains(t, "gpu-busy GPU 2", strings.Join(busy[2], " "), owner+":"+itoa(h.Busy[1]), owner+":"+itoa(h.Busy[2])+" ray::RolloutWorker.sample(batch=512")
	wantContains(t, "gpu-busy GPU 3", strings.Join(busy[3], " "), "85%", "util 85% > 10%")

	if rows := rowsOf(r.stdout, "gpu-nodriver"); len(rows) != 1 || rows[0][5] != "driver-error" ||
		!strings.Contains(rows[0][6], "couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running. (exit 9)") {
		t.Errorf("gpu-nodriver rows %v", rows)
	}
	// Into a pipe every row is one line, whole: its 150-character reason
	// on its row, as a GPU's processes are on theirs.
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for _, line := range lines {
		if strings.HasPrefix(line, " ") {
			t.Errorf("a continuation line:\n%s", line)
		}
	}
	if len(lines) != 1+2+4+2+4+1+1 {
		t.Errorf("%d lines, want a header and 14 rows:\n%s", len(lines), r.stdout)
	}
	if rows := rowsOf(r.stdout, "gpu-nodriver"); len(rows) != 1 || rows[0][6] != nodriverReason {
		t.Errorf("gpu-nodriver's reason is not whole on its row:\n%s", r.stdout)
	}
	if rows := rowsOf(r.stdout, "cpu-only"); len(rows) != 1 || rows[0][5] != "no-gpus" {
		t.Errorf("cpu-only rows %v", rows)
	}
	// GPU 0 in MIG mode is used as its two instances, the first busy with
	// the process the capture puts in its GPU instance, the second free;
	// GPU 1 is whole (and busy).
	mig := rowsOf(r.stdout, "gpu-mig")
	if len(mig) != 4 || mig[0][5] != "excluded" || mig[0][6] != "MIG enabled: used as its MIG instances 2,3" ||
		mig[2][2] != "MIG 3g.20gb of GPU 0" || mig[2][5] != "busy" || !strings.Contains(mig[2][6], "/home/李雷/venv/bin/python3") ||
		mig[3][2] != "MIG 3g.20gb of GPU 0" || mig[3][5] != "free" || mig[3][3] != "13/19968 MiB" {
		t.Errorf("gpu-mig: want GPU 0 excluded for its 2 MIG instances, one busy, one free; got %v", mig)
	}
	if rows := rowsOf(r.stdout, "gpu-na"); len(rows) == 0 || !strings.Contains(r.stdout, "N/A") {
		t.Errorf("gpu-na: want rows with N/A fields, got %v", rows)
	}

	// One nvidia-smi run per host per status: each can take seconds. A
	// host with a GPU in MIG mode has one more, nvidia-smi -L, for its
	// instances' UUIDs.
	for _, h := range f.Hosts {
		want := 1
		if h.Name == "gpu-mig" {
			want = 2
		}
		if h.GPU != "" && h.SMICalls() != want {
			t.Errorf("%s: nvidia-smi ran %d times, want %d", h.Name, h.SMICalls(), want)
		}
	}
	testkit.Golden(t, filepath.Join(sshtest.RepoRoot(), "testdata", "e2e", "status-mixed.txt"), []byte(normalizePIDs(r.stdout, f)))
}

func TestStatusJSON(t *testing.T) {
	f := mixedFleet(t)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	wantCode(t, r, 0)
	var doc view.StatusDocument
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, r.stdout)
	}
	if len(doc.Hosts) != 6 {
		t.Fatalf("want 6 hosts, got %d", len(doc.Hosts))
	}
	byName := map[string]view.StatusHost{}
	for _, h := range doc.Hosts {
		byName[h.Name] = h
		if !h.Reachable {
			t.Errorf("%s: not reachable: %+v", h.Name, h.Err)
		}
	}
	busy := byName["gpu-busy"]
	if len(busy.GPUs) != 4 || busy.GPUs[1].State != "busy" || len(busy.GPUs[1].Processes) != 1 {
		t.Fatalf("gpu-busy: %+v", busy.GPUs)
	}
	p := busy.GPUs[1].Processes[0]
	if p.PID != f.Host("gpu-busy").Busy[0] || p.Command != "python train.py --lr 0.1 100000" || p.User == "" {
		t.Errorf("gpu-busy GPU 1 process: %+v", p)
	}
	if g := busy.GPUs[3]; g.UtilizationPct == nil || *g.UtilizationPct != 85 || g.State != "busy" {
		t.Errorf("gpu-busy GPU 3: %+v", g)
	}
	if h := byName["gpu-nodriver"]; h.DriverError == "" || len(h.GPUs) != 0 {
		t.Errorf("gpu-nodriver: %+v", h)
	}
	if h := byName["cpu-only"]; !h.NoNvidiaSMI {
		t.Errorf("cpu-only: no_nvidia_smi not set: %+v", h)
	}
	if h := byName["gpu-idle"]; h.ClusterAddress != "127.0.0.1" || h.Driver == "" || len(h.ListeningPorts) == 0 {
		t.Errorf("gpu-idle: cluster address %q, driver %q, %d listening ports", h.ClusterAddress, h.Driver, len(h.ListeningPorts))
	}
	// sshd itself listens: the probe must have seen the host's port.
	if !containsInt(byName["gpu-idle"].ListeningPorts, f.Host("gpu-idle").Port) {
		t.Errorf("gpu-idle listening ports %v lack sshd's %d", byName["gpu-idle"].ListeningPorts, f.Host("gpu-idle").Port)
	}
}

func TestStatusHostKeys(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "known", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "newhost", GPU: "idle-2gpu.xml", NotKnown: true},
		sshtest.Profile{Name: "impostor", GPU: "idle-2gpu.xml", WrongKey: true},
	)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 4)
	if rows := rowsOf(r.stdout, "known"); len(rows) != 2 {
		t.Errorf("known host should still be listed: %v", rows)
	}
	wantContains(t, "table", r.stdout, "host key unknown")
	wantContains(t, "stderr", r.stderr, "tfhive: error: 2 of 3 hosts could not be reached",
		"newhost: host key unknown", "--accept-new-host-keys",
		"impostor: host key changed ("+f.KnownHosts+":2)", "ssh-keygen -R")
	if f.Host("newhost").SMICalls() != 0 || f.Host("impostor").SMICalls() != 0 {
		t.Error("a command ran on a host whose key was not verified")
	}

	// Trust on first use adds the new host, never the changed one.
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--accept-new-host-keys")...)
	wantCode(t, r, 4)
	wantContains(t, "stderr", r.stderr, "1 of 3 hosts", "impostor: host key changed")
	r = tfhive(t, f.Env(), f.Dir, "status", "-H", "newhost", "--ssh-config", f.SSHConfig)
	wantCode(t, r, 0)
	kh, _ := os.ReadFile(f.KnownHosts)
	if n := strings.Count(string(kh), "\n"); n != 3 {
		t.Errorf("known_hosts should have gained exactly one line, has %d:\n%s", n, kh)
	}
}

func TestStatusAuthFailures(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "nokey", GPU: "idle-2gpu.xml", NoAuthorized: true},
		sshtest.Profile{Name: "password", GPU: "idle-2gpu.xml", PasswordOnly: true},
	)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 4)
	wantContains(t, "stderr", r.stderr, "nokey: authentication failed for user", f.ClientKey,
		"password: authentication failed", "only passwords")
}

func TestStatusJumpHost(t *testing.T) {
	f := sshtest.Start(t,
		sshtest.Profile{Name: "bastion"},
		sshtest.Profile{Name: "inner", GPU: "idle-2gpu.xml", Jump: "bastion", Listen: "127.0.0.2"},
	)
	r := tfhive(t, f.Env(), f.Dir, "status", "-H", "inner", "--ssh-config", f.SSHConfig)
	wantCode(t, r, 0)
	if rows := rowsOf(r.stdout, "inner"); len(rows) != 2 || rows[0][5] != "free" {
		t.Fatalf("inner via bastion: %v\n%s", rows, r.stdout)
	}
	// Without the bastion the inner host is unreachable: the path went
	// through it.
	f.Host("bastion").Stop()
	r = tfhive(t, f.Env(), f.Dir, "status", "-H", "inner", "--ssh-config", f.SSHConfig)
	wantCode(t, r, 4)
	wantContains(t, "stderr", r.stderr, "inner: jump host bastion: connection refused")
}

func TestStatusSilentHostTimesOut(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "ok", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "silent", Silent: true},
	)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--connect-timeout", "1s")...)
	wantCode(t, r, 4)
	wantContains(t, "stderr", r.stderr, "silent: ssh handshake timed out after 1s")
	if rows := rowsOf(r.stdout, "ok"); len(rows) != 2 {
		t.Errorf("the healthy host must still be listed: %v", rows)
	}
	// Generous bound: far below the 10s default the flag replaced.
	if r.elapsed > 8e9 {
		t.Errorf("status took %s with --connect-timeout 1s", r.elapsed)
	}
}

func TestStatusHangingNvidiaSMI(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "ok", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "wedged", GPU: "idle-2gpu.xml", Hang: true},
	)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--command-timeout", "2s")...)
	wantCode(t, r, 0)
	rows := rowsOf(r.stdout, "wedged")
	if len(rows) != 1 || rows[0][5] != "driver-error" || !strings.Contains(rows[0][6], "timed out after 2s") {
		t.Fatalf("wedged: %v\n%s", rows, r.stdout)
	}
	if left := f.Host("wedged").Leftovers(); len(left) != 0 {
		t.Errorf("the hung nvidia-smi was left running on the host: %v", left)
	}
}

func TestStatusLocalhostDefault(t *testing.T) {
	// No hosts anywhere: this machine, without SSH, with a fake nvidia-smi
	// on PATH.
	dir := t.TempDir()
	gpu := filepath.Join(dir, "gpu")
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(gpu, 0o755)
	os.MkdirAll(bin, 0o755)
	copyFile(t, filepath.Join(sshtest.RepoRoot(), "testdata", "fake", "nvidia-smi"), filepath.Join(bin, "nvidia-smi"), 0o755)
	copyFile(t, filepath.Join(sshtest.RepoRoot(), "testdata", "nvidia-smi", "idle-2gpu.xml"), filepath.Join(gpu, "output"), 0o644)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "TFHIVE_") && !strings.HasPrefix(kv, "HOME=") &&
			!strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+":"+os.Getenv("PATH"), "TFHIVE_FAKE_GPU="+gpu, "HOME="+dir)
	r := tfhive(t, env, dir, "status")
	wantCode(t, r, 0)
	if rows := rowsOf(r.stdout, "localhost"); len(rows) != 2 || rows[0][5] != "free" {
		t.Fatalf("localhost: %v\n%s", rows, r.stdout)
	}
	// Said, not silent: another directory may have a hosts.yaml.
	if want := "tfhive: no hosts given: this machine, without SSH\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}

func TestStatusBadInput(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml"})
	bad := filepath.Join(f.Dir, "bad.yaml")
	os.WriteFile(bad, []byte("hosts:\n  - address: h1\n    prot: 22\n"), 0o600)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status", "--hosts", bad, "--ssh-config", f.SSHConfig}, "tfhive: error: " + bad + ":3: unknown key \"prot\""},
		{[]string{"status", "-H", "h1:99999", "--ssh-config", f.SSHConfig}, "tfhive: error: -H h1:99999: host \"h1:99999\": bad port"},
		{[]string{"status", "-H", "h1", "--ssh-config", f.SSHConfig, "--exclude", "nosuch"}, "tfhive: error:"},
		{[]string{"status", "--no-such-flag"}, "tfhive: error: flag provided but not defined: -no-such-flag"},
		{[]string{"status", "--hosts", filepath.Join(f.Dir, "missing.yaml")}, "tfhive: error: hosts file:"},
		{[]string{"status", "-H", "h1", "--ssh-config", f.SSHConfig, "--connect-timeout", "soon"}, "tfhive: error:"},
	}
	for _, c := range cases {
		r := tfhive(t, f.Env(), f.Dir, c.args...)
		wantCode(t, r, 2)
		if !strings.HasPrefix(r.stderr, c.want) {
			t.Errorf("%v: stderr %q, want prefix %q", c.args, r.stderr, c.want)
		}
		if n := strings.Count(r.stderr, "tfhive: error:"); n != 1 || strings.Count(r.stderr, "\n") > 2 {
			t.Errorf("%v: want one error line (and at most a hint), got:\n%s", c.args, r.stderr)
		}
	}
	if f.Host("h1").SMICalls() != 0 {
		t.Error("a host was probed although the input was invalid")
	}
}

// normalizePIDs replaces the busy processes' pids (they differ each run)
// so the table can be compared with a golden file.
func normalizePIDs(s string, f *sshtest.Fleet) string {
	for i, p := range f.Host("gpu-busy").Busy {
		s = strings.ReplaceAll(s, ":"+itoa(p)+" ", ":PID"+itoa(i)+" ")
	}
	if os.Geteuid() != 0 {
		s = strings.ReplaceAll(s, os.Getenv("USER")+":PID", "nobody:PID")
	}
	return s
}

// A host whose nvidia-smi gives two GPUs one UUID: both are excluded,
// status and run say why once, and no run tries to claim them (claims
// are named by UUID and would collide: "claimed by another run", again
// and again).
func TestSameUUIDExcluded(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "dup", GPU: "idle-2gpu.xml"})
	out := filepath.Join(f.Host("dup").Dir, "gpu", "output")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	uuids := regexp.MustCompile(`<uuid>(GPU-[^<]*)</uuid>`).FindAllSubmatch(data, -1)
	if len(uuids) != 2 {
		t.Fatalf("capture has %d UUIDs", len(uuids))
	}
	if err := os.WriteFile(out, bytes.ReplaceAll(data, uuids[1][1], uuids[0][1]), 0o644); err != nil {
		t.Fatal(err)
	}
	st := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, st, 0)
	wantContains(t, "status", st.stdout, "excluded", "the same UUID ("+string(uuids[0][1])+"): a claim could not tell them apart")
	args, _ := runArgs(t, f, "--workers", "1", "--", "true")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "run", r.stderr, "the same UUID")
	if strings.Contains(r.stderr, "claimed by another run") || strings.Contains(r.stderr, "tfhive: waiting") {
		t.Errorf("run tried to claim them:\n%s", r.stderr)
	}
}
