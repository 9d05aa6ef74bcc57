package hosts

import (
	"strconv"
	"strings"

	"github.com/alessio/shellescape"
)

// displayName is the one place a host's name in tfhive's output is
// decided (inventory.Host.Name: status, plan, ps, runs, the task
// prefixes, errors, --exclude, {host}, --json's "host"):
//
//   - a host with a `name:` shows that name;
//   - else the host part of its address as written (an ssh config alias,
//     a host name or an IP address), with `:port` when a port written
//     with the host (in its address or its own `port:`) is not the one
//     the alias alone gets (from `defaults:`, the ssh config, else 22):
//     `10.0.0.5:2222`, `[fe80::1]:2222`.
//
// So two fleets on one address (containers, forwarded ports) are told
// apart, while a fleet-wide port (`defaults:`, the ssh config's Port)
// adds nothing to every name. `host:port` rather than known_hosts'
// `[host]:port`: it is how -H, pdsh and most tools write it and reads
// better in a table; an IPv6 address keeps the brackets it needs.
func displayName(name, alias string, own, base int) string {
	if name != "" {
		return name
	}
	if own == 0 || own == base {
		return alias
	}
	if strings.Contains(alias, ":") {
		return "[" + alias + "]:" + strconv.Itoa(own)
	}
	return alias + ":" + strconv.Itoa(own)
}

// sshView is what OpenSSH's ssh, given the ssh config tfhive read,
// picks for a host by itself: config is that file when it is not ssh's
// own (--ssh-config, a hosts file's `ssh_config:`; "" for ~/.ssh/config),
// port, user and jump what it says for the alias, else ssh's defaults.
type sshView struct {
	config, user, jump string
	port               int
}

// sshCommand is the ssh command line that reaches the host as tfhive
// dials it, for hints (`ssh -p 2222 bob@10.0.0.5` to trust a host key by
// hand): the ssh config tfhive read when it is not ssh's own, and what
// tfhive's configuration sets that ssh would not pick by itself (the jump
// hosts, the port, the user).
func sshCommand(c *hostConfig) string {
	args := []string{"ssh"}
	if c.ssh.config != "" {
		args = append(args, "-F", shellescape.Quote(c.ssh.config))
	}
	if c.Jump != "" && !strings.EqualFold(c.Jump, c.ssh.jump) {
		args = append(args, "-J", shellescape.Quote(c.Jump))
	}
	if c.Port != c.ssh.port {
		args = append(args, "-p", strconv.Itoa(c.Port))
	}
	target := c.alias
	if c.User != c.ssh.user {
		target = c.User + "@" + target
	}
	return strings.Join(append(args, shellescape.Quote(target)), " ")
}
