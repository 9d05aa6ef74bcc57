package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// nics gives a host its addresses, written as `ip -o addr` would say them:
// "eth0 10.0.0.1/24" (scope global), "lo 127.0.0.1/8 host".
func nics(addrs ...string) hostOpt {
	return func(h *inventory.HostInventory) {
		for _, a := range addrs {
			f := strings.Fields(a)
			ip, prefix, _ := strings.Cut(f[1], "/")
			var n int
			fmt.Sscan(prefix, &n)
			scope := "global"
			if len(f) > 2 {
				scope = f[2]
			}
			h.Interfaces = append(h.Interfaces, inventory.InterfaceAddr{Interface: f[0], Address: ip, Prefix: n, Scope: scope})
		}
	}
}

// sshAt is the host's resolved ssh HostName.
func sshAt(a string) hostOpt {
	return func(h *inventory.HostInventory) { h.Host.Address, h.ClusterAddress, h.Host.ClusterAddress = a, a, a }
}

// clusterAddressSet is a hosts file's cluster_address.
func clusterAddressSet(a string) hostOpt {
	return func(h *inventory.HostInventory) {
		h.ClusterAddress, h.Host.ClusterAddress, h.Host.ClusterAddressSet = a, a, true
	}
}

// A docker host's usual addresses, loopback and bridges, none usable.
var hostPrivate = []string{"lo 127.0.0.1/8 host", "lo ::1/128 host", "docker0 172.17.0.1/16", "virbr0 192.168.122.1/24",
	"br-4f2a9c1e7b3d 172.18.0.1/16", "veth1a2b3c4 fe80::d4a1:21ff:fe3b:9c01/64 link"}

func withPrivate(addrs ...string) hostOpt { return nics(append(hostPrivate, addrs...)...) }

func TestNICChoice(t *testing.T) {
	tests := []struct {
		name string
		inv  inventory.Inventory
		nic  string
		// want is "host=iface@addr" per host with a task, in plan order.
		want string
	}{
		{"docker0, eth0 and lo: eth0", inv(
			host("a", 1, nics("lo 127.0.0.1/8 host", "docker0 172.17.0.1/16", "eth0 10.0.0.1/24")),
			host("b", 1, nics("lo 127.0.0.1/8 host", "docker0 172.17.0.2/16", "eth0 10.0.0.2/24"))), "auto",
			"a=eth0@10.0.0.1 b=eth0@10.0.0.2"},
		{"one host alone: its one usable interface", inv(host("a", 2, withPrivate("eth0 10.0.0.1/24"))), "auto",
			"a=eth0@10.0.0.1"},
		{"two NICs, the other hosts on one subnet: that one", inv(
			host("a", 1, withPrivate("eno1 10.1.0.1/24", "ib0 192.168.50.1/24")),
			host("b", 1, withPrivate("eno1 10.2.0.2/24", "ib0 192.168.50.2/24")),
			host("c", 1, withPrivate("ib0 192.168.50.3/24", "eno1 10.3.0.3/24"))), "auto",
			"a=ib0@192.168.50.1 b=ib0@192.168.50.2 c=ib0@192.168.50.3"},
		{"the subnet shared with more hosts wins", inv(
			host("a", 1, nics("eno1 10.1.0.1/24", "ib0 192.168.50.1/24")),
			host("b", 1, nics("eno1 10.1.0.2/24", "ib0 192.168.50.2/24")),
			host("c", 1, nics("eno1 10.3.0.3/24", "ib0 192.168.50.3/24"))), "auto",
			"a=ib0@192.168.50.1 b=ib0@192.168.50.2 c=ib0@192.168.50.3"},
		{"a tie goes to the network tfhive reached the host on", inv(
			host("a", 1, sshAt("10.1.0.1"), nics("ib0 192.168.50.1/24", "eno1 10.1.0.1/24")),
			host("b", 1, sshAt("10.1.0.2"), nics("ib0 192.168.50.2/24", "eno1 10.1.0.2/24"))), "auto",
			"a=eno1@10.1.0.1 b=eno1@10.1.0.2"},
		{"then IPv4, then the host's order", inv(
			host("a", 1, nics("eth0 2001:db8::1/64", "eth1 10.9.0.1/24", "eth2 10.8.0.1/24")),
			host("b", 1, nics("eth0 2001:db8::2/64", "eth1 10.9.0.2/24", "eth2 10.8.0.2/24"))), "auto",
			"a=eth1@10.9.0.1 b=eth1@10.9.0.2"},
		{"IPv6 only", inv(
			host("a", 1, nics("lo ::1/128 host", "eth0 fe80::1/64 link", "eth0 2001:db8::1/64")),
			host("b", 1, nics("eth0 2001:db8::2/64"))), "auto",
			"a=eth0@2001:db8::1 b=eth0@2001:db8::2"},
		{"an address every host has reaches none of them", inv(
			host("a", 1, nics("bond0 10.0.0.1/24", "eth9 192.168.1.1/24")),
			host("b", 1, nics("bond0 10.0.0.2/24", "eth9 192.168.1.1/24"))), "auto",
			"a=bond0@10.0.0.1 b=bond0@10.0.0.2"},
		{"hosts without a task play no part", inv(
			host("a", 1, nics("eno1 10.1.0.1/24", "ib0 192.168.50.1/24")),
			host("b", 0, nics("ib0 192.168.50.2/24")),
			host("c", 1, nics("eno1 10.1.0.3/24", "ib0 192.168.50.3/24"))), "auto",
			"a=eno1@10.1.0.1 c=eno1@10.1.0.3"},
		{"named: that interface, whatever auto would say", inv(
			host("a", 1, withPrivate("eth0 10.0.0.1/24", "eth1 10.5.0.1/16")),
			host("b", 1, withPrivate("eth0 10.0.0.2/24", "eth1 10.6.0.2/16"))), "eth1",
			"a=eth1@10.5.0.1 b=eth1@10.6.0.2"},
		{"named: never its link-local address", inv(
			host("a", 1, nics("eth1 fe80::1/64 link", "eth1 10.5.0.1/16")),
			host("b", 1, nics("eth1 10.5.0.2/16"))), "eth1",
			"a=eth1@10.5.0.1 b=eth1@10.5.0.2"},
		{"cluster_address wins, on the interface holding it", inv(
			host("a", 1, clusterAddressSet("10.0.0.1"), nics("eth0 10.0.0.1/24", "ib0 192.168.50.1/24")),
			host("b", 1, nics("eth0 10.0.0.2/24", "ib0 192.168.50.2/24"))), "auto",
			"a=eth0@10.0.0.1 b=eth0@10.0.0.2"},
		{"cluster_address of a NAT: the interface whose subnet holds it", inv(
			host("a", 1, clusterAddressSet("10.0.0.77"), nics("eth0 10.0.0.1/24"))), "auto",
			"a=eth0@10.0.0.77"},
		{"cluster_address in no usable interface's subnet: none", inv(
			host("a", 1, clusterAddressSet("127.77.5.3"), nics("lo 127.0.0.1/8 host", "docker0 127.77.5.1/24", "eth0 10.0.0.1/24"))), "auto",
			"a=@127.77.5.3"},
		{"cluster_address as a name: --nic's interface", inv(
			host("a", 1, clusterAddressSet("a.cluster.example"), nics("eth0 10.0.0.1/24", "ib0 192.168.50.1/24"))), "ib0",
			"a=ib0@a.cluster.example"},
		{"cluster_address as a name, auto: no interface told", inv(
			host("a", 1, clusterAddressSet("a.cluster.example"), nics("eth0 10.0.0.1/24"))), "auto",
			"a=@a.cluster.example"},
		{"cluster_address on a host without usable interfaces", inv(
			host("a", 1, clusterAddressSet("10.0.0.9"), nics("lo 127.0.0.1/8 host"))), "auto",
			"a=@10.0.0.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Make(tt.inv, req(func(r *Request) { r.NIC = tt.nic; r.Workers = planned(tt.inv) }))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range p.Matrix {
				if m.Interface != "" || hasTask(p, m.Host) {
					got = append(got, m.Host+"="+m.Interface+"@"+m.Address)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("got  %s\nwant %s", strings.Join(got, " "), tt.want)
			}
			if p.NIC != tt.nic {
				t.Errorf("plan nic %q, want %q", p.NIC, tt.nic)
			}
			for _, task := range p.Tasks {
				m := matrixRow(p, task.Host)
				if !strings.HasPrefix(task.Address, bracket(m.Address)+":") {
					t.Errorf("%s: address %s, want its host's %s", task.ID, task.Address, m.Address)
				}
				nccl, gloo := "="+m.Interface, m.Interface
				if m.Interface == "" {
					nccl = ""
				}
				if task.Env["NCCL_SOCKET_IFNAME"] != nccl || task.Env["GLOO_SOCKET_IFNAME"] != gloo {
					t.Errorf("%s: NCCL_SOCKET_IFNAME=%q GLOO_SOCKET_IFNAME=%q, want %q and %q", task.ID,
						task.Env["NCCL_SOCKET_IFNAME"], task.Env["GLOO_SOCKET_IFNAME"], nccl, gloo)
				}
				if !strings.Contains(task.TFConfig, `"`+task.Address+`"`) {
					t.Errorf("%s: TF_CONFIG %s does not list its address %s", task.ID, task.TFConfig, task.Address)
				}
			}
		})
	}
}

// planned is how many one-GPU workers fill every GPU of the inventory.
func planned(in inventory.Inventory) int {
	n := 0
	for _, h := range in.Hosts {
		n += len(h.GPUs)
	}
	return n
}

func hasTask(p *Plan, h string) bool {
	for _, t := range p.Tasks {
		if t.Host == h {
			return true
		}
	}
	return false
}

func matrixRow(p *Plan, h string) MatrixHost {
	for _, m := range p.Matrix {
		if m.Host == h {
			return m
		}
	}
	return MatrixHost{}
}

func bracket(a string) string {
	if strings.Contains(a, ":") {
		return "[" + a + "]"
	}
	return a
}

// Exit 2, naming the host and what it has.
func TestNICNoneUsable(t *testing.T) {
	tests := []struct {
		name string
		inv  inventory.Inventory
		nic  string
		want string
	}{
		{"loopback, bridges and link-local only", inv(host("a", 1, nics("eth0 10.0.0.1/24")), host("b", 1, withPrivate())), "auto",
			"--nic auto: b has no interface the other hosts can use: lo 127.0.0.1/8 (loopback), lo ::1/128 (loopback), " +
				"docker0 172.17.0.1/16 (container bridge), virbr0 192.168.122.1/24 (container bridge), " +
				"br-4f2a9c1e7b3d 172.18.0.1/16 (container bridge), veth1a2b3c4 fe80::d4a1:21ff:fe3b:9c01/64 (container bridge)"},
		{"an address another host has too", inv(host("a", 1, nics("eth0 10.0.0.1/24")), host("b", 1, nics("eth0 10.0.0.1/24"))), "auto",
			"--nic auto: a has no interface the other hosts can use: eth0 10.0.0.1/24 (also on b)"},
		{"nothing listed", inv(host("a", 1)), "auto",
			"--nic auto: a listed no network interfaces"},
		{"named, missing", inv(host("a", 1, nics("eth0 10.0.0.1/24")), host("b", 1, withPrivate("eth0 10.0.0.2/24", "eth1 10.1.0.2/24"))), "eth1",
			"--nic eth1: a has no interface eth1, it has eth0"},
		{"named, link-local only", inv(host("a", 1, nics("ib0 fe80::1/64 link"))), "ib0",
			"--nic ib0: a has no address on ib0 that other hosts can use: ib0 fe80::1/64 (link-local)"},
		{"named, the same address on two hosts", inv(host("a", 1, withPrivate()), host("b", 1, withPrivate())), "docker0",
			"--nic docker0: a and b both have 172.17.0.1: it reaches neither from the other"},
		{"a long list is cut", inv(host("a", 1, nics("lo 127.0.0.1/8 host", "veth0 fe80::1/64 link", "veth1 fe80::2/64 link",
			"veth2 fe80::3/64 link", "veth3 fe80::4/64 link", "veth4 fe80::5/64 link", "veth5 fe80::6/64 link", "veth6 fe80::7/64 link",
			"veth7 fe80::8/64 link", "veth8 fe80::9/64 link"))), "auto",
			"--nic auto: a has no interface the other hosts can use: lo 127.0.0.1/8 (loopback), veth0 fe80::1/64 (container bridge), " +
				"veth1 fe80::2/64 (container bridge), veth2 fe80::3/64 (container bridge), veth3 fe80::4/64 (container bridge), " +
				"veth4 fe80::5/64 (container bridge), veth5 fe80::6/64 (container bridge), veth6 fe80::7/64 (container bridge), …"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Make(tt.inv, req(func(r *Request) { r.NIC = tt.nic; r.Workers = planned(tt.inv) }))
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v (%T), want a UsageError (exit 2)", err, err)
			}
			if ue.Msg != tt.want {
				t.Errorf("got  %s\nwant %s", ue.Msg, tt.want)
			}
			if !strings.Contains(ue.Fix, "--nic NAME") && !strings.Contains(ue.Fix, "--nic auto") {
				t.Errorf("hint %q", ue.Fix)
			}
		})
	}
}

// Without --nic the plan is what it always was: the interfaces are not
// looked at.
func TestNICNotAsked(t *testing.T) {
	in := inv(host("a", 1, withPrivate("eth0 10.0.0.1/24")), host("b", 1))
	p, err := Make(in, req(func(r *Request) { r.Workers = 2 }))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range p.Tasks {
		if _, ok := task.Env["NCCL_SOCKET_IFNAME"]; ok || !strings.HasPrefix(task.Address, task.Host+":") {
			t.Errorf("%s: address %s env %v", task.ID, task.Address, task.Env)
		}
	}
	for _, m := range p.Matrix {
		if m.Interface != "" || m.Address != m.Host {
			t.Errorf("matrix %+v", m)
		}
	}
}

func TestNICTorch(t *testing.T) {
	in := inv(host("a", 1, withPrivate("eno1 10.1.0.1/24", "ib0 192.168.50.1/24")),
		host("b", 1, withPrivate("eno1 10.2.0.2/24", "ib0 192.168.50.2/24")))
	p, err := Make(in, req(func(r *Request) { r.Framework = FrameworkTorch; r.Workers = 2; r.NIC = NICAuto }))
	if err != nil {
		t.Fatal(err)
	}
	if p.Master != "192.168.50.1:2222" {
		t.Errorf("master %s, want a's ib0 address", p.Master)
	}
	for i, task := range p.Tasks {
		want := []string{"192.168.50.1", "192.168.50.2"}[i]
		if task.Address != want || task.Env["MASTER_ADDR"] != "192.168.50.1" ||
			task.Env["NCCL_SOCKET_IFNAME"] != "=ib0" || task.Env["GLOO_SOCKET_IFNAME"] != "ib0" {
			t.Errorf("%s: address %s env %v", task.ID, task.Address, task.Env)
		}
	}
}

// A bad --nic fails before any host is seen.
func TestNICValidate(t *testing.T) {
	for nic, ok := range map[string]bool{
		"": true, "auto": true, "eth0": true, "enp65s0f1np1": true, "ib0.8001": true, "eth0@x": true,
		"eth 0": false, "a/b": false, "eth0:1": false, "..": false, "sixteen-chars-xx": false, "é": false, "-": true,
	} {
		r := req(func(r *Request) { r.NIC = nic })
		err := r.Validate()
		if (err == nil) != ok {
			t.Errorf("--nic %q: error %v, want ok=%v", nic, err, ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "bad --nic ") {
			t.Errorf("--nic %q: %v", nic, err)
		}
	}
}
