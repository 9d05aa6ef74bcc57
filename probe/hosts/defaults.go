package hosts

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// The built-in settings, OpenSSH's where it has one: what a host gets when
// neither its hosts-file entry, the file's defaults nor the ssh config
// says otherwise. Every package takes them from here.
const (
	// DefaultFile is the hosts file used, when it exists, if neither -H,
	// --hosts nor $TFHIVE_HOSTS is given; it is also the per-user file's
	// name (UserFile).
	DefaultFile = "hosts.yaml"
	DefaultPort = 22
	// DefaultConnectTimeout bounds TCP connect and SSH handshake together.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultKeepAlive and DefaultKeepAliveMax stand for ServerAliveInterval
	// and ServerAliveCountMax: a link silent for 45 s is dropped, and so are
	// the tasks behind it.
	DefaultKeepAlive    = 15 * time.Second
	DefaultKeepAliveMax = 3
	// GlobalKnownHostsFile is checked after the user's known_hosts files,
	// as OpenSSH's GlobalKnownHostsFile.
	GlobalKnownHostsFile = "/etc/ssh/ssh_known_hosts"
)

// defaultIdentities are the identity files tried when neither the hosts
// file nor the ssh config names one, as OpenSSH does (in ~/.ssh).
var defaultIdentities = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// IsDefaultIdentity tells a default identity file (~/.ssh/id_rsa…) from
// one a hosts file or ssh config names: only the latter is worth a word
// when it does not exist.
func IsDefaultIdentity(path string) bool {
	return filepath.Base(filepath.Dir(path)) == ".ssh" && slices.Contains(defaultIdentities, filepath.Base(path))
}

// KeepAlive is h's keepalive interval and count: its ssh_config
// ServerAlive* settings, else the defaults. The same period bounds how long
// a task's supervisor waits for tfhive's heartbeats.
func KeepAlive(h inventory.Host) (time.Duration, int) {
	every, max := DefaultKeepAlive, DefaultKeepAliveMax
	if h.KeepAlive > 0 {
		every = h.KeepAlive
	}
	if h.KeepAliveMax > 0 {
		max = h.KeepAliveMax
	}
	return every, max
}

// defaults are the built-in settings for one run: the user's home
// directory and name fill in the files and the user.
type defaults struct {
	User                  string
	Port                  int
	IdentityFiles         []string
	KnownHostsFiles       []string
	GlobalKnownHostsFiles []string
}

func defaultsFor(o Options) defaults {
	d := defaults{
		User:                  o.LocalUser,
		Port:                  DefaultPort,
		KnownHostsFiles:       []string{filepath.Join(o.Home, ".ssh", "known_hosts")},
		GlobalKnownHostsFiles: []string{GlobalKnownHostsFile},
	}
	for _, f := range defaultIdentities {
		d.IdentityFiles = append(d.IdentityFiles, filepath.Join(o.Home, ".ssh", f))
	}
	return d
}

// SetDefaults fills in what no source set. KeepAlive and KeepAliveMax stay
// zero: the Host documents zero as the defaults (see KeepAlive).
func (c *hostConfig) SetDefaults(d defaults) {
	if c.User == "" {
		c.User = d.User
	}
	if c.Port == 0 {
		c.Port = d.Port
	}
	if c.Address == "" {
		c.Address = c.alias
	}
	if c.ClusterAddress == "" {
		c.ClusterAddress = c.Address
	}
	if len(c.IdentityFiles) == 0 {
		c.IdentityFiles = slices.Clone(d.IdentityFiles)
	}
	if len(c.KnownHostsFiles) == 0 {
		c.KnownHostsFiles = slices.Clone(d.KnownHostsFiles)
	}
	if c.globalKnownHosts == nil {
		c.globalKnownHosts = d.GlobalKnownHostsFiles
	}
}
