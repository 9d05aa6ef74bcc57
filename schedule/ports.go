package schedule

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// localhost is the address every task gets when all of them run on Local
// hosts: nothing needs to be reachable from elsewhere then.
const localhost = "localhost"

// clusterAddress is what other hosts dial for tasks on h. probe resolves it;
// the fallbacks only keep a hand-built inventory (tests) from producing ":2222".
func clusterAddress(h *inventory.HostInventory) string {
	for _, a := range []string{h.ClusterAddress, h.Host.ClusterAddress, h.Host.Address, h.Name} {
		if a != "" {
			return a
		}
	}
	return ""
}

func isLoopback(addr string) bool {
	if addr == localhost || strings.HasSuffix(addr, ".localhost") {
		return true
	}
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}

// addresses gives each task the address its peers dial: the address of
// the interface --nic chose for its host, else the host's cluster address.
// A loopback address
// is only right when every task is on that same machine, so a plan that
// mixes loopback with real addresses is refused: its tasks could never reach
// each other, and the user has to say which address to use.
func addresses(inv inventory.Inventory, ds []demand, spots []spot, nics map[int]nicChoice) ([]string, error) {
	allLocal := nics == nil
	for _, s := range spots {
		allLocal = allLocal && inv.Hosts[s.host].Host.Local
	}
	out := make([]string, len(spots))
	loop, other := -1, -1 // a task on a loopback / a non-loopback address
	for i, s := range spots {
		if allLocal {
			out[i] = localhost
			continue
		}
		out[i] = clusterAddress(&inv.Hosts[s.host])
		if c, ok := nics[s.host]; ok {
			out[i] = c.addr
		}
		if isLoopback(out[i]) {
			loop = i
		} else {
			other = i
		}
	}
	if loop >= 0 && other >= 0 {
		h := inv.Hosts[spots[loop].host].Name
		return nil, usageErr(
			fmt.Sprintf("set cluster_address for %s in the hosts file to an address the other hosts can reach", h),
			"%s has loopback address %s but %s is on %s (%s): tasks could not reach each other",
			h, out[loop], ds[other].id(), inv.Hosts[spots[other].host].Name, out[other])
	}
	return out, nil
}

// portSpace is the ports of one address: what uses them there (pooled
// over every host name planned on it) and what tfhive has handed out so
// far.
type portSpace struct {
	hosts []string
	used  map[int]portUse
	given map[int]bool
	next  int
}

// portUse says why a port is not free: something listens there, a claim
// holds it (a run's, or a lock somebody holds by hand), or its lock file
// blocks it. Messages say which, as the kernel and the file system told
// the probe, so that a port nothing listens on is never said to listen.
type portUse struct {
	kind  string           // "listening", "claimed", "blocked"
	claim *inventory.Claim // for claimed and blocked: whose (why)
}

// portSpaces groups the planned hosts by address. Ports are unique per
// address, not per host name: two names for one machine (all 127.0.0.1 in
// tests, an alias and its IP) share one port space, so their listening
// ports are pooled too.
func portSpaces(inv inventory.Inventory, spots []spot, addrs []string, lo int) map[string]*portSpace {
	spaces := map[string]*portSpace{}
	for i, s := range spots {
		ps := spaces[addrs[i]]
		if ps == nil {
			ps = &portSpace{used: map[int]portUse{}, given: map[int]bool{}, next: lo}
			spaces[addrs[i]] = ps
		}
		if h := &inv.Hosts[s.host]; !slices.Contains(ps.hosts, h.Name) {
			ps.hosts = append(ps.hosts, h.Name)
			for _, p := range h.ListeningPorts {
				ps.used[p] = portUse{kind: "listening"}
			}
			// A claimed port may not listen yet (its task is starting).
			for j := range h.Claims {
				c := &h.Claims[j]
				if c.Kind != "port" {
					continue
				}
				if _, listens := ps.used[c.ID]; listens {
					continue
				}
				ps.used[c.ID] = claimUse(c)
			}
		}
	}
	return spaces
}

// take gives the lowest port from next on that nothing listens on, or 0
// when [next, hi] has none left.
func (ps *portSpace) take(hi int) int {
	p := ps.next
	for _, used := ps.used[p]; p <= hi && used; _, used = ps.used[p] {
		p++
	}
	if p > hi {
		return 0
	}
	ps.given[p] = true
	ps.next = p + 1
	return p
}

func (ps *portSpace) exhausted(what, addr string, lo, hi int) error {
	return &CapacityError{
		Msg: fmt.Sprintf("no free port for %s on %s: --port-range %d-%d has %d ports, %s and %d given to other tasks",
			what, addr, lo, hi, hi-lo+1, ps.usedWords(lo, hi), len(ps.given)),
		Fix:   "widen --port-range, or put fewer tasks on one host",
		Lines: ps.lines(addr, lo, hi),
	}
}

// claimUse is a port claim as the probe saw it: a run's or a lock held
// by something that is not a tfhive task, or a lock file that blocks the
// port.
func claimUse(c *inventory.Claim) portUse {
	if c.Blocked != "" {
		return portUse{kind: "blocked", claim: c}
	}
	return portUse{kind: "claimed", claim: c}
}

// why says whose a claimed or blocked port is: a run's, a lock's
// holder's (its user), or what the lock file that blocks it is. Only a
// port error words it.
func (u portUse) why() string {
	c := u.claim
	who := c.User
	if who == "" {
		who = "an unknown user"
	}
	switch {
	case c.Blocked != "":
		return c.Blocked
	case c.RunID != "":
		return fmt.Sprintf("run %s of %s", c.RunID, who)
	default:
		return fmt.Sprintf("its lock is held by %s, not by a tfhive run", who)
	}
}

// usedWords counts the range's ports in use by kind: "1 listening there",
// "1 listening there, 2 claimed, 1 blocked".
func (ps *portSpace) usedWords(lo, hi int) string {
	n := map[string]int{}
	for p := lo; p <= hi; p++ {
		if u, ok := ps.used[p]; ok && !ps.given[p] {
			n[u.kind]++
		}
	}
	words := []string{fmt.Sprintf("%d listening there", n["listening"])}
	for _, k := range []string{"claimed", "blocked"} {
		if n[k] > 0 {
			words = append(words, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return strings.Join(words, ", ")
}

// lines are the detail lines under a port error: the hosts of the
// address, then each claimed or blocked port of the range (at most 8),
// saying whose.
func (ps *portSpace) lines(addr string, lo, hi int) []string {
	out := []string{fmt.Sprintf("%s: hosts %s", addr, strings.Join(ps.hosts, ", "))}
	shown := 0
	for p := lo; p <= hi; p++ {
		u, ok := ps.used[p]
		if !ok || u.kind == "listening" || ps.given[p] {
			continue
		}
		if shown++; shown > 8 {
			out = append(out, "…")
			break
		}
		out = append(out, fmt.Sprintf("%s: port %d %s: %s", addr, p, u.kind, u.why()))
	}
	return out
}

// assignPorts gives every task the lowest port in [lo, hi] that nothing
// listens on and no earlier task on the same address got.
func assignPorts(inv inventory.Inventory, ds []demand, spots []spot, addrs []string, lo, hi int) ([]int, error) {
	spaces := portSpaces(inv, spots, addrs, lo)
	ports := make([]int, len(spots))
	for i := range spots {
		ps := spaces[addrs[i]]
		if ports[i] = ps.take(hi); ports[i] == 0 {
			return nil, ps.exhausted(ds[i].id(), addrs[i], lo, hi)
		}
	}
	return ports, nil
}
