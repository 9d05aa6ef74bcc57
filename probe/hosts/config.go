package hosts

import (
	"net"
	"slices"

	"github.com/tfhive/tfhive/probe/inventory"
)

// hostConfig is one host as its sources give it, most specific first: the
// hosts-file entry (and the user@ and :port in its address), the file's
// defaults:, then the ssh config. What none of them sets stays zero until
// SetDefaults; Validate then checks the whole, and host is the result.
type hostConfig struct {
	inventory.Host
	// alias is the address's host part as written: what the ssh config
	// is matched against and, without a HostName, what is dialled. Name
	// is the same unless the hosts file gives the host a `name:`.
	alias string
	// globalKnownHosts are checked after Host.KnownHostsFiles, the user's
	// (OpenSSH's GlobalKnownHostsFile; tfhive does not read it from the
	// ssh config).
	globalKnownHosts []string
	// ssh is what OpenSSH's ssh, given the same ssh config, would pick
	// for alias by itself: Host.SSH adds what differs (sshCommand).
	ssh sshView
}

// Validate checks what only the merged, defaulted host can show: every
// value given was checked as it was read.
func (c *hostConfig) Validate() error {
	// The name was checked as -H or address:, so a bad address is a
	// HostName from the ssh config.
	if why := hostNameTooLong("ssh config HostName ", c.Address); why != "" {
		return configErrorf("%s: %s", c.Source, why)
	}
	if !hostNameRE.MatchString(c.Address) && !isIP(c.Address) {
		return configErrorf("%s: ssh config HostName %s is not a host name or IP address", c.Source, quoted(c.Address))
	}
	if c.User == "" {
		return configErrorf("%s: no user name (set user: or User in the ssh config)", c.Source)
	}
	return nil
}

func (c *hostConfig) host() inventory.Host {
	h := c.Host
	if !h.Local {
		h.SSH = sshCommand(c)
	}
	h.KnownHostsFiles = append(slices.Clip(h.KnownHostsFiles), c.globalKnownHosts...)
	return h
}

func isIP(s string) bool { return net.ParseIP(s) != nil }
