// Package inventory holds the plain data the probe learns and the planner
// plans from: hosts as configured, their GPUs, processes, claims and errors.
// It imports nothing but the standard library, so that schedule, which
// must stay pure, depends on nothing else of tfhive.
package inventory

// Inventory is what the probe learned about the fleet, in the order the hosts
// were given. It is plain data: schedule plans from it and launcher renders it,
// and its JSON form is the documented `tfhive status --json` document.
type Inventory struct {
	Hosts []HostInventory `json:"hosts"`
}

// HostInventory is one host's answer, or the reason there was none.
type HostInventory struct {
	Host Host `json:"-"`
	// Name is the host as the user wrote it (alias or address): the key used
	// in output, --exclude and placement.
	Name string `json:"host"`
	// ClusterAddress is what other hosts use to reach tasks on this one.
	ClusterAddress string `json:"cluster_address"`
	// Err is nil when the host answered. A host whose driver failed is
	// reachable (Err nil) but has DriverError set.
	Err *HostError `json:"error,omitempty"`
	// Driver is the NVIDIA driver version, "" when unknown or no driver.
	Driver string `json:"driver_version,omitempty"`
	// DriverError says why GPUs could not be listed on a reachable host
	// (driver not loaded, nvidia-smi timed out). GPUs is empty then.
	DriverError string `json:"driver_error,omitempty"`
	// NoNvidiaSMI is true on a reachable host without nvidia-smi (CPU only).
	NoNvidiaSMI bool  `json:"no_nvidia_smi,omitempty"`
	GPUs        []GPU `json:"gpus"`
	// ListeningPorts are the TCP ports something listens on (any address,
	// IPv4 or IPv6), sorted and unique: ports a task must not be given.
	ListeningPorts []int `json:"listening_ports"`
	// Claims are the GPUs and ports tfhive runs hold on this host now, and
	// the lock files that block one (Claim.Blocked).
	Claims []Claim `json:"claims"`
	// MachineID is the host's /etc/machine-id ("-" when it has none) and
	// ClaimsDir where its claims live: two names for one machine share
	// both, and would book its GPUs twice.
	MachineID string `json:"machine_id,omitempty"`
	ClaimsDir string `json:"claims_dir,omitempty"`
	// CodeDir is where the --sync tree the probe asked about lives, or
	// would, on this host (absolute); CodePresent says it is there
	// already. Both are empty when no tree was asked about.
	CodeDir     string `json:"code_dir,omitempty"`
	CodePresent bool   `json:"code_present,omitempty"`
}

// Reachable reports whether the host answered the probe.
func (h *HostInventory) Reachable() bool { return h.Err == nil }

// GPU is one physical GPU as nvidia-smi reports it. Pointers are nil where
// nvidia-smi said "[N/A]" or "[Not Supported]".
type GPU struct {
	// Index is nvidia-smi's index (PCI bus order), which is what
	// CUDA_VISIBLE_DEVICES means once CUDA_DEVICE_ORDER=PCI_BUS_ID.
	Index          int       `json:"index"`
	UUID           string    `json:"uuid"`
	Name           string    `json:"name"`
	MemoryUsedMiB  *int      `json:"memory_used_mib"`
	MemoryTotalMiB *int      `json:"memory_total_mib"`
	UtilizationPct *int      `json:"utilization_pct"`
	MIG            bool      `json:"mig,omitempty"`
	Processes      []Process `json:"processes"`
}

// Process is a compute process running on a GPU.
type Process struct {
	PID int `json:"pid"`
	// User owns the process; "" when the host could not tell (the process
	// ended between nvidia-smi and ps, or lives in another PID namespace).
	User          string `json:"user"`
	Command       string `json:"command"`
	UsedMemoryMiB *int   `json:"used_memory_mib"`
}

// ErrorKind classifies why a host could not be probed, so that output and
// exit codes can be chosen without parsing messages.
type ErrorKind string

const (
	ErrTimeout        ErrorKind = "timeout"
	ErrRefused        ErrorKind = "refused"
	ErrDNS            ErrorKind = "dns"
	ErrAuth           ErrorKind = "auth"
	ErrHostKeyUnknown ErrorKind = "host-key-unknown"
	ErrHostKeyChanged ErrorKind = "host-key-changed"
	ErrSSH            ErrorKind = "ssh"
	ErrCommand        ErrorKind = "command"
)

// HostError is why a host is unusable, with the host it concerns.
type HostError struct {
	Kind    ErrorKind `json:"kind"`
	Message string    `json:"message"`
	Hint    string    `json:"hint,omitempty"`
}

func (e *HostError) Error() string { return e.Message }
