package inventory

import "time"

// Host is one machine to reach, after the hosts file's defaults and
// ~/.ssh/config have been applied. Every Host that leaves hosts.Load has
// passed its Validate.
type Host struct {
	// Name is the host's label in output and in --exclude: its `name:`,
	// else the alias or address as the user wrote it, without user@, with
	// :port when the user gave a port other than 22 (hosts.displayName
	// decides it; no other code formats a host's name).
	Name string `json:"name"`
	// Address is what is dialled: ssh_config's HostName, else Name.
	Address string `json:"address"`
	Port    int    `json:"port"`
	User    string `json:"user"`
	// IdentityFiles are tried after the agent's keys, in order.
	IdentityFiles []string `json:"identity_files,omitempty"`
	// Jump is a ProxyJump chain ("a,b" = through a, then b), "" for none;
	// Via is that chain resolved, each hop with its own ssh_config settings.
	Jump string `json:"jump,omitempty"`
	Via  []Host `json:"-"`
	// KnownHostsFiles are checked for the host key; the first one is where
	// --accept-new-host-keys appends.
	KnownHostsFiles []string `json:"known_hosts_files,omitempty"`
	// HostKeyAlias replaces Name:Port when looking up known_hosts.
	HostKeyAlias string `json:"host_key_alias,omitempty"`
	// ClusterAddress is the address other hosts use to reach this one's
	// tasks: the hosts file's cluster_address, else Address.
	ClusterAddress string `json:"cluster_address"`
	// ClusterAddressSet is true when the hosts file gave cluster_address:
	// then --nic does not move the host's cluster address.
	ClusterAddressSet bool `json:"-"`
	// GPUs, when not nil, are the only GPU indices that may be used.
	GPUs []int `json:"gpus,omitempty"`
	// Slots, when not 0, is the most GPUs a run may use here: a
	// --hostfile's `host slots=N`.
	Slots   int               `json:"slots,omitempty"`
	Workdir string            `json:"workdir,omitempty"`
	Setup   string            `json:"setup,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// KeepAlive and KeepAliveMax are ssh_config's ServerAliveInterval and
	// ServerAliveCountMax; zero means tfhive's defaults (15s, 3). They also
	// set how soon a task whose link went silent is stopped on its host.
	KeepAlive    time.Duration `json:"-"`
	KeepAliveMax int           `json:"-"`
	// SSH is the ssh command line that reaches the host as tfhive dials
	// it ("ssh -p 2222 10.0.0.5"), for hints; "" for a local host.
	SSH string `json:"-"`
	// Local hosts run commands without SSH (the no-hosts-given default).
	Local bool `json:"local,omitempty"`
	// Source says where the host was defined ("hosts.yaml:12", "-H"), for
	// error messages.
	Source string `json:"-"`
}
