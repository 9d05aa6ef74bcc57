package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// The --nic tests' hosts report their interfaces through a fake ip
// (testdata/nic/fleet-*.txt): loopback; eno1, a management network of
// each host's own; ib0, the one subnet every host is on; docker0, the
// same address everywhere. Their addresses are in 127.77.0.0/16, so tasks
// bound to them really talk. nic-c has nothing the others could use.
func nicFleet(t *testing.T, names ...string) *sshtest.Fleet {
	var ps []sshtest.Profile
	for _, n := range names {
		ps = append(ps, sshtest.Profile{Name: n, GPU: "idle-2gpu.xml", NIC: "fleet-" + strings.TrimPrefix(n, "nic-") + ".txt", AliveInterval: 1})
	}
	return sshtest.Start(t, ps...)
}

// ib0 is each host's interface on the subnet the others are on.
var nicIB0 = map[string]string{"nic-a": "127.77.9.1", "nic-b": "127.77.9.2"}

// auto picks ib0 on every host: the plan says so, the tasks really train
// over it (the trainer binds exactly its ClusterSpec address), and each
// task's environment names it.
func TestNICAutoRun(t *testing.T) {
	f := nicFleet(t, "nic-a", "nic-b")

	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--nic", "auto", "--ps", "1", "--workers", "2", "--", "python", "train.py")...)
	wantCode(t, r, 0)
	wantContains(t, "plan", r.stdout, "strategy spread, nic auto")
	for host, addr := range nicIB0 {
		// The matrix row: HOST ADDRESS NIC GPU0 GPU1.
		if rows := rowsOf(r.stdout, host); len(rows) != 1 || len(rows[0]) < 3 || rows[0][1] != addr || rows[0][2] != "ib0" {
			t.Errorf("%s's matrix rows %q, want address %s on ib0", host, rows, addr)
		}
	}

	args, logDir := runArgs(t, f, "--nic", "auto", "--ps", "1", "--workers", "2", "--",
		"sh", "-c", `echo "nccl=[$NCCL_SOCKET_IFNAME] gloo=[$GLOO_SOCKET_IFNAME]"; exec "$0"`, trainerBin)
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	p := planOf(t, logDir)
	if p.NIC != "auto" {
		t.Errorf("plan.json nic %q", p.NIC)
	}
	for _, hostport := range slices.Concat(p.Cluster.PS, p.Cluster.Worker) {
		if !strings.HasPrefix(hostport, "127.77.9.") {
			t.Errorf("ClusterSpec %+v: %s is not on ib0", p.Cluster, hostport)
		}
	}
	s := summaryOf(t, logDir)
	if s.Result != "succeeded" || len(s.Tasks) != 3 {
		t.Fatalf("summary %+v", s)
	}
	for _, tr := range s.Tasks {
		if !strings.HasPrefix(tr.Address, nicIB0[tr.Host]+":") {
			t.Errorf("%s on %s: address %s, want its ib0 %s", tr.ID, tr.Host, tr.Address, nicIB0[tr.Host])
		}
		log, _ := os.ReadFile(tr.Log)
		want := []string{"nccl=[=ib0] gloo=[ib0]"}
		if tr.Role == "ps" {
			want = append(want, "ps 0 listening on "+tr.Address)
		} else {
			want = append(want, "worker "+itoa(tr.Index)+" reached loss")
		}
		wantContains(t, tr.ID+" log", string(log), want...)
	}
	noLeftovers(t, f, 10*time.Second)
}

// status --json lists each host's interfaces as its ip reports them.
func TestNICStatusJSON(t *testing.T) {
	f := nicFleet(t, "nic-a")
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	wantCode(t, r, 0)
	var doc struct {
		Hosts []struct {
			Host       string                    `json:"host"`
			Interfaces []inventory.InterfaceAddr `json:"interfaces"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	want := []inventory.InterfaceAddr{
		{Interface: "lo", Address: "127.0.0.1", Prefix: 8, Scope: "host"},
		{Interface: "eno1", Address: "127.77.2.1", Prefix: 24, Scope: "global"},
		{Interface: "ib0", Address: "127.77.9.1", Prefix: 24, Scope: "global"},
		{Interface: "docker0", Address: "127.77.1.1", Prefix: 24, Scope: "global"},
	}
	if len(doc.Hosts) != 1 || !slices.Equal(doc.Hosts[0].Interfaces, want) {
		t.Errorf("status --json hosts %+v, want nic-a with %+v", doc.Hosts, want)
	}
}

// A torch plan's master and every rank are on ib0 too. Plan only: gloo
// and NCCL would look for an interface named ib0 on this machine, which
// has none.
func TestNICAutoTorchPlan(t *testing.T) {
	f := nicFleet(t, "nic-a", "nic-b")
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--json", "--framework", "torch", "--nic", "auto", "--workers", "4", "--", "python", "train.py")...)
	wantCode(t, r, 0)
	var p struct {
		Master string
		Tasks  []struct {
			Host, Address string
			Env           map[string]string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if !strings.HasPrefix(p.Master, "127.77.9.1:") || len(p.Tasks) != 4 {
		t.Fatalf("master %s, %d ranks; want nic-a's ib0 and 4", p.Master, len(p.Tasks))
	}
	for _, task := range p.Tasks {
		if task.Address != nicIB0[task.Host] || task.Env["MASTER_ADDR"] != "127.77.9.1" ||
			task.Env["GLOO_SOCKET_IFNAME"] != "ib0" || task.Env["NCCL_SOCKET_IFNAME"] != "=ib0" {
			t.Errorf("rank on %s: address %s env %v", task.Host, task.Address, task.Env)
		}
	}
}

// A host with nothing usable: exit 2 naming it and what it has, before
// anything starts; a cluster_address in the hosts file still wins.
func TestNICAutoNoneUsable(t *testing.T) {
	f := nicFleet(t, "nic-a", "nic-c")
	const want = "tfhive: error: --nic auto: nic-c has no interface the other hosts can use: lo 127.0.0.1/8 (loopback), " +
		"lo ::1/128 (loopback), docker0 127.77.1.1/24 (container bridge), veth1a2b3c4 fe80::d4a1:21ff:fe3b:9c01/64 (container bridge)\n" +
		"tfhive: hint: name the interface with --nic NAME, or set cluster_address for nic-c in the hosts file\n"
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--nic", "auto", "--workers", "2", "--", "python", "train.py")...)
	wantCode(t, r, 2)
	if withoutClonesWarning(r.stderr) != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	args, logDir := runArgs(t, f, "--nic", "auto", "--workers", "2", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 2)
	if r.stderr != want {
		t.Errorf("run's stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("the refused run made its log dir (%v)", err)
	}

	hosts := filepath.Join(f.Dir, "nic-hosts.yaml")
	os.WriteFile(hosts, []byte("hosts:\n  - nic-a\n  - address: nic-c\n    cluster_address: 127.77.5.3\n"), 0o644)
	r = tfhive(t, f.Env(), f.Dir, "plan", "--hosts", hosts, "--ssh-config", f.SSHConfig, "--json", "--nic", "auto", "--workers", "2", "--", "python", "train.py")
	wantCode(t, r, 0)
	var p struct {
		Tasks []struct {
			Host, Address string
			Env           map[string]string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	for _, task := range p.Tasks {
		switch {
		case task.Host == "nic-c" && (!strings.HasPrefix(task.Address, "127.77.5.3:") || task.Env["NCCL_SOCKET_IFNAME"] != ""):
			t.Errorf("nic-c: address %s, NCCL_SOCKET_IFNAME %q; want its cluster_address, no interface", task.Address, task.Env["NCCL_SOCKET_IFNAME"])
		case task.Host == "nic-a" && !strings.HasPrefix(task.Address, "127.77."):
			t.Errorf("nic-a: address %s", task.Address)
		}
	}
}
