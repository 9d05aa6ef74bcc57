package schedule

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// NICAuto is --nic auto: each host's interface is chosen from what it
// reports.
const NICAuto = "auto"

// --nic chooses, for every host holding a task, the interface that carries
// the cluster traffic, from the addresses the probe listed:
//
//   - auto considers the addresses of scope global on interfaces that are
//     not loopback or a container or VM bridge (notBridge), and not held
//     by another planned host too (docker0's 172.17.0.1 is on every
//     docker host: it reaches none of them from elsewhere). Of those, the
//     address whose subnet holds addresses of the most other planned hosts
//     wins; then the one tfhive reached the host through (its ssh
//     HostName, when an IP), so that a tie changes nothing from the plan
//     without --nic; then IPv4; then the host's own order.
//   - NAME takes that interface's address (the same ranking when it has
//     several; never a link-local one, which needs a zone).
//
// The host's cluster address becomes that address, and its tasks get
// NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME naming the interface. A
// cluster_address from the hosts file stays the cluster address; the
// interface is then the one holding it (or whose subnet does), else NAME
// when the host has it, else none: its tasks get no interface variables.
// Without --nic nothing changes.

// nicChoice is one planned host's interface and cluster address.
type nicChoice struct {
	iface string // "" when none could be told (cluster_address kept)
	addr  string
	kept  bool // addr is the hosts file's cluster_address
}

// containerBridges are the prefixes of the interfaces auto never picks:
// bridges and virtual links of containers and VMs, private to their host.
var containerBridges = []string{"docker", "veth", "virbr", "br-", "podman", "cni", "lxcbr", "lxdbr"}

// chooseNICs gives each host holding a task (by position in inv.Hosts) its
// choice; nil when nic is "" (no --nic).
func chooseNICs(inv inventory.Inventory, spots []spot, nic string) (map[int]nicChoice, error) {
	if nic == "" {
		return nil, nil
	}
	var hosts []int
	for _, s := range spots {
		if !slices.Contains(hosts, s.host) {
			hosts = append(hosts, s.host)
		}
	}
	cands := map[int][]candidate{}
	for _, h := range hosts {
		cands[h] = candidates(inv, hosts, h, nic)
	}
	out := map[int]nicChoice{}
	for _, h := range hosts {
		hi := &inv.Hosts[h]
		if hi.Host.ClusterAddressSet {
			out[h] = keptAddress(inv, hosts, h, nic)
			continue
		}
		best, ok := bestCandidate(inv, hosts, h, cands)
		if !ok {
			return nil, noInterface(inv, hosts, h, nic)
		}
		out[h] = nicChoice{iface: best.Interface, addr: best.Address}
	}
	if nic != NICAuto {
		if err := checkDistinct(inv, hosts, out, nic); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// candidate is an address --nic may choose, parsed.
type candidate struct {
	inventory.InterfaceAddr
	ip     netip.Addr
	subnet netip.Prefix
}

// candidates are host h's addresses that --nic may choose from, in its
// order.
func candidates(inv inventory.Inventory, hosts []int, h int, nic string) []candidate {
	var out []candidate
	for _, a := range inv.Hosts[h].Interfaces {
		c, ok := parseCandidate(a)
		if !ok || unusable(inv, hosts, h, nic, c) != "" {
			continue
		}
		out = append(out, c)
	}
	return out
}

func parseCandidate(a inventory.InterfaceAddr) (candidate, bool) {
	ip, err := netip.ParseAddr(a.Address)
	if err != nil {
		return candidate{}, false
	}
	subnet, err := ip.Prefix(a.Prefix)
	if err != nil {
		return candidate{}, false
	}
	return candidate{InterfaceAddr: a, ip: ip, subnet: subnet}, true
}

// unusable says why --nic does not take address c of host h, "" when it
// may.
func unusable(inv inventory.Inventory, hosts []int, h int, nic string, c candidate) string {
	if nic != NICAuto {
		switch {
		case c.Interface != nic:
			return "not " + nic
		case c.Scope == "link":
			return "link-local"
		}
		return ""
	}
	switch {
	case c.Interface == "lo" || c.Scope == "host":
		return "loopback"
	case slices.ContainsFunc(containerBridges, func(p string) bool { return strings.HasPrefix(c.Interface, p) }):
		return "container bridge"
	case c.Scope == "link":
		return "link-local"
	case c.Scope != "global":
		return "scope " + c.Scope
	}
	if other := holder(inv, hosts, h, c.ip); other != "" {
		return "also on " + other
	}
	return ""
}

// holder names another planned host that has address ip too, "" if none.
func holder(inv inventory.Inventory, hosts []int, h int, ip netip.Addr) string {
	for _, o := range hosts {
		if o == h {
			continue
		}
		for _, a := range inv.Hosts[o].Interfaces {
			if other, err := netip.ParseAddr(a.Address); err == nil && other == ip {
				return inv.Hosts[o].Name
			}
		}
	}
	return ""
}

// bestCandidate ranks host h's candidates (see the rules above).
func bestCandidate(inv inventory.Inventory, hosts []int, h int, cands map[int][]candidate) (candidate, bool) {
	cs := cands[h]
	if len(cs) == 0 {
		return candidate{}, false
	}
	sshAddr, _ := netip.ParseAddr(inv.Hosts[h].Host.Address)
	type ranked struct {
		c                    candidate
		peers, reached, ipv4 int
		order                int
	}
	rs := make([]ranked, len(cs))
	for i, c := range cs {
		r := ranked{c: c, order: i}
		for _, o := range hosts {
			if o != h && slices.ContainsFunc(cands[o], func(oc candidate) bool { return c.subnet.Contains(oc.ip) }) {
				r.peers++
			}
		}
		if sshAddr.IsValid() && c.subnet.Contains(sshAddr) {
			r.reached = 1
		}
		if c.ip.Is4() {
			r.ipv4 = 1
		}
		rs[i] = r
	}
	best := slices.MinFunc(rs, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.peers, a.peers), cmp.Compare(b.reached, a.reached),
			cmp.Compare(b.ipv4, a.ipv4), cmp.Compare(a.order, b.order))
	})
	return best.c, true
}

// keptAddress is the choice for host h, whose hosts file entry gives
// cluster_address: that address, on the interface holding it or on one
// auto could take whose subnet holds it (a NAT's address; not lo's
// 127.0.0.0/8), else on interface nic when the host has it.
func keptAddress(inv inventory.Inventory, hosts []int, h int, nic string) nicChoice {
	hi := &inv.Hosts[h]
	addr := clusterAddress(hi)
	out := nicChoice{addr: addr, kept: true}
	ip, err := netip.ParseAddr(addr)
	if err == nil {
		var within string
		for _, a := range hi.Interfaces {
			c, ok := parseCandidate(a)
			switch {
			case !ok:
			case c.ip == ip:
				out.iface = c.Interface
				return out
			case within == "" && c.subnet.Contains(ip) && unusable(inv, hosts, h, NICAuto, c) == "":
				within = c.Interface
			}
		}
		if within != "" {
			out.iface = within
			return out
		}
	}
	if nic != NICAuto && slices.ContainsFunc(hi.Interfaces, func(a inventory.InterfaceAddr) bool { return a.Interface == nic }) {
		out.iface = nic
	}
	return out
}

// noInterface is the error for a host without an address --nic may take:
// what it has, and why each does not do.
func noInterface(inv inventory.Inventory, hosts []int, h int, nic string) error {
	hi := &inv.Hosts[h]
	hint := fmt.Sprintf("name the interface with --nic NAME, or set cluster_address for %s in the hosts file", hi.Name)
	if len(hi.Interfaces) == 0 {
		return usageErr(hint, "--nic %s: %s listed no network interfaces", nic, hi.Name)
	}
	const shown = 8 // a host with a veth per container would make a page
	var has []string
	for _, a := range hi.Interfaces {
		if nic != NICAuto && a.Interface != nic {
			continue
		}
		if len(has) == shown {
			has = append(has, "…")
			break
		}
		why := "unusable address"
		if c, ok := parseCandidate(a); ok {
			why = unusable(inv, hosts, h, nic, c)
		}
		has = append(has, fmt.Sprintf("%s %s/%d (%s)", a.Interface, a.Address, a.Prefix, why))
	}
	if nic != NICAuto {
		if len(has) == 0 {
			var names []string
			for _, a := range hi.Interfaces {
				if !slices.Contains(names, a.Interface) {
					names = append(names, a.Interface)
				}
			}
			return usageErr(hint, "--nic %s: %s has no interface %s, it has %s", nic, hi.Name, nic, strings.Join(names, ", "))
		}
		return usageErr(hint, "--nic %s: %s has no address on %s that other hosts can use: %s", nic, hi.Name, nic, strings.Join(has, ", "))
	}
	return usageErr(hint, "--nic auto: %s has no interface the other hosts can use: %s", hi.Name, strings.Join(has, ", "))
}

// checkDistinct refuses an interface named by --nic that has the same
// address on two hosts (docker0 everywhere): tasks could not tell the
// hosts apart.
func checkDistinct(inv inventory.Inventory, hosts []int, out map[int]nicChoice, nic string) error {
	seen := map[string]string{}
	for _, h := range hosts {
		c := out[h]
		if c.kept {
			continue // the user's own address, as without --nic
		}
		if other, dup := seen[c.addr]; dup {
			return usageErr("name an interface whose addresses differ between hosts, or use --nic auto",
				"--nic %s: %s and %s both have %s: it reaches neither from the other", nic, other, inv.Hosts[h].Name, c.addr)
		}
		seen[c.addr] = inv.Hosts[h].Name
	}
	return nil
}

// setNICEnv names the task's host's interface for the collective
// backends: NCCL's "=" asks for exactly that name (a bare eth1 is a prefix
// and also matches eth10), gloo's is exact.
func setNICEnv(env map[string]string, c nicChoice) {
	if c.iface == "" {
		return
	}
	env["NCCL_SOCKET_IFNAME"] = "=" + c.iface
	env["GLOO_SOCKET_IFNAME"] = c.iface
}

// validNIC checks --nic before any host is touched.
func validNIC(nic string) error {
	if nic == "" || nic == NICAuto || inventory.ValidInterfaceName(nic) {
		return nil
	}
	return usageErr("give an interface name such as eth0 or ib0, or auto", "bad --nic %q: not an interface name", nic)
}
