package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// The captures: ip-container and proc-container are one machine's `ip -o
// addr` and the probe's /proc/net lines; ip-gpuhost and proc-gpuhost a
// docker GPU host with InfiniBand, a VPN and a libvirt bridge.
var interfaceCaptures = []string{"ip-container.txt", "proc-container.txt", "ip-gpuhost.txt", "proc-gpuhost.txt"}

func TestGoldenInterfaces(t *testing.T) {
	for _, name := range interfaceCaptures {
		checkGolden(t, testdataDir+"/nic/"+name, parseInterfaces(readTestdata(t, "nic/"+name)))
	}
}

func addrSet(as []inventory.InterfaceAddr) []string {
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%s %s/%d %s", a.Interface, a.Address, a.Prefix, a.Scope))
	}
	slices.Sort(s)
	return s
}

// ip and /proc/net say the same of one machine, but for what /proc/net
// cannot tell: the local end of a point-to-point link is in no subnet
// of its interface.
func TestInterfacesIPAndProcAgree(t *testing.T) {
	for _, m := range []struct {
		name    string
		ipOnly  []string
		wantLen int
	}{{"container", nil, 5}, {"gpuhost", []string{"tun0 10.8.0.6/32 global"}, 15}} {
		fromIP := addrSet(parseInterfaces(readTestdata(t, "nic/ip-"+m.name+".txt")))
		fromProc := addrSet(parseInterfaces(readTestdata(t, "nic/proc-"+m.name+".txt")))
		want := slices.DeleteFunc(slices.Clone(fromIP), func(s string) bool { return slices.Contains(m.ipOnly, s) })
		if !reflect.DeepEqual(fromProc, want) {
			t.Errorf("%s: /proc/net gives\n%s\nip gives\n%s", m.name, strings.Join(fromProc, "\n"), strings.Join(fromIP, "\n"))
		}
		if len(fromIP) != m.wantLen {
			t.Errorf("%s: %d addresses from ip, want %d:\n%s", m.name, len(fromIP), m.wantLen, strings.Join(fromIP, "\n"))
		}
	}
}

func TestParseInterfacesOdd(t *testing.T) {
	const life = `\       valid_lft forever preferred_lft forever`
	for _, tt := range []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"no lifetimes", "2: eth0    inet 10.0.0.5/24 scope global eth0\n", []string{"eth0 10.0.0.5/24 global"}},
		{"no trailing newline", "2: eth0    inet 10.0.0.5/24 scope global eth0" + life, []string{"eth0 10.0.0.5/24 global"}},
		{"each address once", "2: eth0    inet 10.0.0.5/24 scope global eth0\n2: eth0    inet 10.0.0.5/24 scope global eth0\n",
			[]string{"eth0 10.0.0.5/24 global"}},
		{"the same address on two interfaces is two entries", "2: eth0    inet 10.0.0.5/24 scope global eth0\n3: eth1    inet 10.0.0.5/24 scope global eth1\n",
			[]string{"eth0 10.0.0.5/24 global", "eth1 10.0.0.5/24 global"}},
		{"name with a slash", "2: a/b    inet 10.0.0.5/24 scope global a\n", nil},
		{"name too long", "2: abcdefghijklmnop    inet 10.0.0.5/24 scope global x\n", nil},
		{"name with an escape", "2: eth\x1b[31m    inet 10.0.0.5/24 scope global x\n", nil},
		{"not an address", "2: eth0    inet 10.0.0.256/24 scope global eth0\n", nil},
		{"prefix too long", "2: eth0    inet 10.0.0.5/33 scope global eth0\n", nil},
		{"family does not match", "2: eth0    inet 2001:db8::1/64 scope global eth0\n2: eth0    inet6 10.0.0.5/24 scope global eth0\n", nil},
		{"a zone", "2: eth0    inet6 fe80::1%eth0 scope link\n", nil},
		{"no scope", "2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 eth0\n", nil},
		{"dadfailed", "2: eth0    inet6 2001:db8::1/64 scope global dadfailed tentative \n", nil},
		{"index not a number", "x: eth0    inet 10.0.0.5/24 scope global eth0\n", nil},
		{"link lines are not addresses", "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP\\    link/ether 02:42:ac:11:00:02 brd ff:ff:ff:ff:ff:ff\n", nil},
		{"an error from ip", "Cannot open netlink socket: Permission denied\n", nil},
		{"route mask not a prefix", "route eth0 0000000A 00FF00FF\nlocal 10.0.0.5\n", nil},
		{"route hex too short", "route eth0 00000A 00FFFFFF\nlocal 10.0.0.5\n", nil},
		{"local in no route", "route eth0 0000000A 000000FF\nlocal 192.168.1.5\n", nil},
		{"narrowest route wins", "route eth0 0000000A 000000FF\nroute eth1 0000000A 0000FFFF\nlocal 10.0.0.5\n",
			[]string{"eth1 10.0.0.5/16 global"}},
		{"IPv4 link-local", "route eth0 0000FEA9 0000FFFF\nlocal 169.254.3.4\n", []string{"eth0 169.254.3.4/16 link"}},
		{"a local that is not IPv4", "route eth0 00000000 00000000\nlocal ::1\n", nil},
		{"inet6 short", "inet6 fe80000000000000000000000000000 02 40 20 80 eth0\n", nil},
		{"inet6 prefix too long", "inet6 20010db8000000000000000000000001 02 81 00 80 eth0\n", nil},
		{"inet6 unknown scope", "inet6 20010db8000000000000000000000001 02 40 05 80 eth0\n", nil},
		{"inet6 site", "inet6 fec00000000000000000000000000001 02 40 40 80 eth0\n", []string{"eth0 fec0::1/64 site"}},
	} {
		got := parseInterfaces([]byte(tt.in))
		if got == nil {
			t.Errorf("%s: nil, want a list", tt.name)
		}
		if s := addrSet(got); !slices.Equal(s, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, s, tt.want)
		}
	}
}

// A host cannot make the planner weigh a million addresses.
func TestParseInterfacesBounded(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "%d: veth%d    inet6 fe80::%x/64 scope link \\       valid_lft forever preferred_lft forever\n", i+2, i, i+1)
	}
	got := parseInterfaces([]byte("1: lo    inet 127.0.0.1/8 scope host lo\n" + b.String()))
	if len(got) != maxInterfaceAddrs || got[0].Interface != "lo" || got[1].Interface != "veth0" {
		t.Errorf("%d addresses, first %+v", len(got), got[:2])
	}
}

// fakeIP puts an ip on PATH that prints a capture, or fails as a missing
// one does.
func fakeIP(t *testing.T, binDir string, capture []byte, missing bool) {
	t.Helper()
	script := "#!/bin/sh\ncat \"$(dirname \"$0\")/ip.out\"\n"
	if missing {
		script = "#!/bin/sh\necho 'ip: not here' >&2\nexit 127\n"
	}
	writeFile(t, binDir, "ip.out", string(capture))
	writeFile(t, binDir, "ip", script)
	if err := os.Chmod(filepath.Join(binDir, "ip"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The probe passes ip's output on as it is.
func TestProbeScriptInterfacesFromIP(t *testing.T) {
	capture := readTestdata(t, "nic/ip-gpuhost.txt")
	binDir, gpuDir := fakeGPU(t, readTestdata(t, "nvidia-smi/idle-2gpu.xml"), 0)
	fakeIP(t, binDir, capture, false)
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 10*time.Second)
	if got := section(po.nic); got+"\n" != string(capture) {
		t.Errorf("nic section differs from the capture:\n%s", got)
	}
}

// Without ip, /proc/net says what ip would have said of this machine.
func TestProbeScriptInterfacesWithoutIP(t *testing.T) {
	if _, err := os.Stat("/proc/net/fib_trie"); err != nil {
		t.Skip("no /proc/net/fib_trie")
	}
	binDir, gpuDir := fakeGPU(t, readTestdata(t, "nvidia-smi/idle-2gpu.xml"), 0)
	fakeIP(t, binDir, nil, true)
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 10*time.Second)
	fromProc := parseInterfaces(po.nic)
	if !slices.Contains(addrSet(fromProc), "lo 127.0.0.1/8 host") {
		t.Errorf("no lo 127.0.0.1/8 from /proc/net:\n%s", po.nic)
	}
	real, err := exec.Command("ip", "-o", "addr", "show").Output()
	if err != nil {
		t.Logf("no ip here to compare with: %v", err)
		return
	}
	// Each IPv4 address ip lists in a subnet of its own interface, and
	// every IPv6 one: point-to-point ends are the exception.
	var want []inventory.InterfaceAddr
	for _, a := range parseInterfaces(real) {
		if !strings.Contains(a.Address, ":") && a.Prefix == 32 {
			continue
		}
		want = append(want, a)
	}
	if got := addrSet(fromProc); !reflect.DeepEqual(got, addrSet(want)) {
		t.Errorf("/proc/net gives\n%s\nip gives\n%s", strings.Join(got, "\n"), strings.Join(addrSet(want), "\n"))
	}
}

// `tfhive ps` and `kill` run no ip.
func TestProbeScriptClaimsOnlyRunsNoIP(t *testing.T) {
	binDir, gpuDir := fakeGPU(t, nil, 0)
	writeFile(t, binDir, "ip", "#!/bin/sh\necho called >\"$(dirname \"$0\")/ip.called\"\n")
	os.Chmod(filepath.Join(binDir, "ip"), 0o755)
	cmd := exec.Command("/bin/sh", "-c", probeCommand(10*time.Second, true, "", 0, false, ""))
	cmd.Env = []string{"PATH=" + binDir + ":/usr/bin:/bin", "TFHIVE_FAKE_GPU=" + gpuDir, "LC_ALL=C"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	po, err := splitProbeOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(po.nic) != 0 {
		t.Errorf("nic section %q, want empty", po.nic)
	}
	if _, err := os.Stat(filepath.Join(binDir, "ip.called")); err == nil {
		t.Error("ip ran for a claims-only probe")
	}
}
