package probe

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// parseInterfaces reads the probe's interface section: `ip -o addr` or, on
// a host without iproute2, the lines the probe makes of /proc/net (see
// scripts/probe.sh). What the host prints is checked, not trusted: a name
// must be one Linux allows for an interface (and printable), an address
// must parse; any other line is skipped. Addresses the kernel cannot use
// yet or ever (tentative, failed duplicate detection) are left out. The
// result is in the host's order, each address of an interface once, at
// most maxInterfaceAddrs of them, and non-nil.
func parseInterfaces(out []byte) []inventory.InterfaceAddr {
	addrs := []inventory.InterfaceAddr{}
	seen := map[inventory.InterfaceAddr]bool{}
	add := func(a inventory.InterfaceAddr) {
		if !inventory.ValidInterfaceName(a.Interface) || seen[a] {
			return
		}
		seen[a] = true
		addrs = append(addrs, a)
	}
	var routes []procRoute
	var locals []netip.Addr
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "route":
			if r, ok := parseProcRoute(f[1:]); ok {
				routes = append(routes, r)
			}
		case "local":
			if len(f) == 2 {
				if ip, err := netip.ParseAddr(f[1]); err == nil && ip.Is4() {
					locals = append(locals, ip)
				}
			}
		case "inet6":
			if a, ok := parseIfInet6(f[1:]); ok {
				add(a)
			}
		default:
			if a, ok := parseIPAddrLine(line); ok {
				add(a)
			}
		}
	}
	// IPv4 from /proc/net: /proc/net lists IPv6 with its interface, IPv4
	// only in the routing tables, so they go first, as `ip` lists them.
	var v4 []inventory.InterfaceAddr
	for _, ip := range locals {
		if a, ok := procLocalAddr(ip, routes); ok && !seen[a] && inventory.ValidInterfaceName(a.Interface) {
			seen[a] = true
			v4 = append(v4, a)
		}
	}
	all := append(append(make([]inventory.InterfaceAddr, 0, len(v4)+len(addrs)), v4...), addrs...)
	return all[:min(len(all), maxInterfaceAddrs)]
}

// maxInterfaceAddrs bounds what one host can make the planner weigh: a
// node with a link-local veth per container lists a few hundred, and the
// interfaces that matter come first (ip lists them by index).
const maxInterfaceAddrs = 1024

// parseIPAddrLine reads one line of `ip -o addr`:
//
//	4: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global dynamic eth0\       valid_lft 86000sec preferred_lft 86000sec
//	9: tun0    inet 10.8.0.1 peer 10.8.0.2/32 scope global tun0\ …
func parseIPAddrLine(line string) (inventory.InterfaceAddr, bool) {
	line, _, _ = strings.Cut(line, `\`) // the lifetimes follow the backslash
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasSuffix(f[0], ":") || !isUint(strings.TrimSuffix(f[0], ":")) ||
		(f[2] != "inet" && f[2] != "inet6") {
		return inventory.InterfaceAddr{}, false
	}
	a := inventory.InterfaceAddr{Interface: f[1]}
	if p, err := netip.ParsePrefix(f[3]); err == nil {
		a.Address, a.Prefix = p.Addr().String(), p.Bits()
	} else if ip, err := netip.ParseAddr(f[3]); err == nil && !ip.Is4In6() && ip.Zone() == "" {
		// A point-to-point address: alone on its side of the link.
		a.Address, a.Prefix = ip.String(), ip.BitLen()
	} else {
		return inventory.InterfaceAddr{}, false
	}
	if ip := netip.MustParseAddr(a.Address); ip.Is4() != (f[2] == "inet") {
		return inventory.InterfaceAddr{}, false
	}
	for i := 4; i < len(f); i++ {
		switch f[i] {
		case "scope":
			if i+1 < len(f) {
				a.Scope = f[i+1]
				i++
			}
		case "tentative", "dadfailed":
			return inventory.InterfaceAddr{}, false
		}
	}
	if a.Scope == "" {
		return inventory.InterfaceAddr{}, false
	}
	return a, true
}

// procRoute is a subnet routed without a gateway: the addresses of the
// interface's own link.
type procRoute struct {
	iface  string
	subnet netip.Prefix
}

// parseProcRoute reads "IFACE DEST MASK" from /proc/net/route, whose
// addresses are in the host's byte order: little-endian, as on every GPU
// host (x86-64, arm64, ppc64le). A mask that is not a prefix is refused.
func parseProcRoute(f []string) (procRoute, bool) {
	if len(f) != 3 {
		return procRoute{}, false
	}
	dest, ok1 := procIPv4(f[1])
	mask, ok2 := procIPv4(f[2])
	if !ok1 || !ok2 {
		return procRoute{}, false
	}
	m := binary.BigEndian.Uint32(mask.AsSlice())
	ones := bits.LeadingZeros32(^m)
	if bits.OnesCount32(m) != ones {
		return procRoute{}, false
	}
	subnet, err := dest.Prefix(ones)
	if err != nil {
		return procRoute{}, false
	}
	return procRoute{iface: f[0], subnet: subnet}, true
}

func procIPv4(s string) (netip.Addr, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte{b[3], b[2], b[1], b[0]}), true
}

// procLocalAddr puts a local IPv4 address on the interface whose own
// subnet holds it, the narrowest one. The loopback net is routed in the
// local table only, which route does not show: it is lo's.
func procLocalAddr(ip netip.Addr, routes []procRoute) (inventory.InterfaceAddr, bool) {
	best := -1
	for i, r := range routes {
		if r.subnet.Contains(ip) && (best < 0 || r.subnet.Bits() > routes[best].subnet.Bits()) {
			best = i
		}
	}
	a := inventory.InterfaceAddr{Address: ip.String(), Scope: "global"}
	switch {
	case ip.IsLoopback():
		a.Interface, a.Prefix, a.Scope = "lo", 8, "host"
	case ip.IsLinkLocalUnicast():
		a.Scope = "link"
	}
	if best >= 0 {
		a.Interface, a.Prefix = routes[best].iface, routes[best].subnet.Bits()
	}
	return a, a.Interface != ""
}

// parseIfInet6 reads a line of /proc/net/if_inet6: address, interface
// index, prefix length, scope and flags (hex), name.
func parseIfInet6(f []string) (inventory.InterfaceAddr, bool) {
	if len(f) != 6 {
		return inventory.InterfaceAddr{}, false
	}
	b, err := hex.DecodeString(f[0])
	if err != nil || len(b) != 16 {
		return inventory.InterfaceAddr{}, false
	}
	prefix, err1 := strconv.ParseUint(f[2], 16, 8)
	scope, err2 := strconv.ParseUint(f[3], 16, 16)
	flags, err3 := strconv.ParseUint(f[4], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil || prefix > 128 {
		return inventory.InterfaceAddr{}, false
	}
	const tentative, dadFailed = 0x40, 0x08 // IFA_F_*
	if flags&(tentative|dadFailed) != 0 {
		return inventory.InterfaceAddr{}, false
	}
	a := inventory.InterfaceAddr{Interface: f[5], Address: netip.AddrFrom16([16]byte(b)).String(), Prefix: int(prefix)}
	switch scope {
	case 0x00:
		a.Scope = "global"
	case 0x10:
		a.Scope = "host"
	case 0x20:
		a.Scope = "link"
	case 0x40:
		a.Scope = "site"
	default:
		return inventory.InterfaceAddr{}, false
	}
	return a, true
}
