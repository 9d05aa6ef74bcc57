// Package inventory holds the plain data the probe learns and the planner
// plans from: hosts as configured, their GPUs, processes, claims and errors.
// It imports nothing but the standard library, so that schedule, which
// must stay pure, depends on nothing else of tfhive.
package inventory

import "time"

// Inventory is what the probe learned about the fleet, in the order the hosts
// were given. It is plain data: schedule plans from it and launcher renders it,
// and its JSON form is the documented `tfhive status --json` document.
type Inventory struct {
	Hosts []HostInventory `json:"hosts"`
	// Seeded: an older probe than the one asked for, answered at once
	// (a sweep's trial on the newest coalesced probe: probe.Coalescer).
	// A start planned on it honours the hosts' queue in the supervisor's
	// claim check (launcher.Options.SeenTickets).
	Seeded bool `json:"-"`
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
	// CUDA is the CUDA version the driver supports, as nvidia-smi says it.
	CUDA string `json:"cuda_version,omitempty"`
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
	// MachineID is the host's /etc/machine-id ("-" when it has none),
	// ProcessTable its boot id's first word and PID namespace's number
	// ("BOOT-PIDNS"), and ClaimsDir where its claims live: two names for
	// one machine share all three, and would book its GPUs twice. Clones
	// of one image often share a machine id, never a process table.
	MachineID    string `json:"machine_id,omitempty"`
	ProcessTable string `json:"process_table,omitempty"`
	ClaimsDir    string `json:"claims_dir,omitempty"`
	// CodeDir is where the --sync tree the probe asked about lives, or
	// would, on this host (absolute); CodePresent says it is there
	// already. Both are empty when no tree was asked about.
	CodeDir     string `json:"code_dir,omitempty"`
	CodePresent bool   `json:"code_present,omitempty"`
	// Interfaces are the host's network addresses, one entry per address
	// of each interface, in the order the host lists them: what --nic
	// chooses from. Empty when the host could not list them.
	Interfaces []InterfaceAddr `json:"interfaces,omitempty"`
	// Policy is the host's fair-sharing policy in force, nil when it has
	// none (or one that was ignored: PolicyWarning says why).
	Policy        *Policy `json:"policy,omitempty"`
	PolicyWarning string  `json:"policy_warning,omitempty"`
	// PolicyError: the policy file is malformed ("FILE:LINE: why"); no
	// plan is made with such a host.
	PolicyError string `json:"policy_error,omitempty"`
	// Tickets are the runs waiting for GPUs here (tfhive run --wait).
	Tickets []Ticket `json:"tickets,omitempty"`
	// Bookings are the reservations in the claims dir (tfhive reserve),
	// ended ones too, in the order they were made; one not honoured says
	// why (Booking.Ignored).
	Bookings []Booking `json:"reservations,omitempty"`
	// BookingsUnknown, when set, says why the host's reservations are
	// not all known (more files than a probe lists): Bookings is then a
	// part of them. Only a claims-only probe (ps, kill, unreserve) sets
	// it; a probe that plans fails the host instead (Err), so that none
	// of its GPUs is taken as unreserved.
	BookingsUnknown string `json:"reservations_unknown,omitempty"`
	// Me is who we are on the host: whose reservations let our runs in.
	Me string `json:"-"`
	// Probed is when the probe answered, by this machine's clock: the
	// reservations' windows are judged at it, so that a plan stays pure.
	Probed time.Time `json:"-"`
	// PolicyContext is set with Policy.
	PolicyContext *PolicyContext `json:"-"`
	// Kept is what the user's own kept run directories say of the runs
	// whose claims are held here; nil unless asked for (tfhive ps).
	Kept *KeptRuns `json:"-"`
	// GPUUse is the live utilisation of the host's GPUs when some run
	// holds GPU claims here; nil unless asked for (tfhive ps).
	GPUUse []GPUUse `json:"-"`
}

// InterfaceAddr is one address of one network interface, as `ip -o addr`
// lists it.
type InterfaceAddr struct {
	Interface string `json:"interface"` // "eth0"
	Address   string `json:"address"`   // the IP alone: "10.0.0.5", "fd00::5"
	Prefix    int    `json:"prefix"`    // its subnet's prefix length: 24
	// Scope is the kernel's: "global" (others may reach it), "link"
	// (IPv6 fe80::, IPv4 169.254/16: this link only) or "host" (loopback).
	Scope string `json:"scope"`
}

// ValidInterfaceName is Linux's rule for interface names (dev_valid_name:
// 1-15 bytes, no '/', ':' or space, not "." or "..") narrowed to
// printable ASCII: a name goes into environment variables, plans and
// messages. The probe keeps no other, and --nic takes no other.
func ValidInterfaceName(s string) bool {
	if len(s) == 0 || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '/' || c == ':' {
			return false
		}
	}
	return true
}

// Reachable reports whether the host answered the probe.
func (h *HostInventory) Reachable() bool { return h.Err == nil }

// GPU is one physical GPU as nvidia-smi reports it. Pointers are nil where
// nvidia-smi said "[N/A]" or "[Not Supported]".
type GPU struct {
	// Index is nvidia-smi's index (PCI bus order), which is what
	// CUDA_VISIBLE_DEVICES means once CUDA_DEVICE_ORDER=PCI_BUS_ID.
	Index          int    `json:"index"`
	UUID           string `json:"uuid"`
	Name           string `json:"name"`
	MemoryUsedMiB  *int   `json:"memory_used_mib"`
	MemoryTotalMiB *int   `json:"memory_total_mib"`
	UtilizationPct *int   `json:"utilization_pct"`
	// MIG: the GPU is in MIG mode; CUDA reaches it only through its MIG
	// instances, which follow the host's physical GPUs in its GPU list.
	MIG       bool      `json:"mig,omitempty"`
	Processes []Process `json:"processes"`
	// MIGInstance is set on a MIG instance's entry (nil on a physical
	// GPU): its Index is the host's next free number after its physical
	// GPUs (nvidia-smi numbers MIG devices per GPU only), its UUID the
	// MIG-… one CUDA_VISIBLE_DEVICES takes, its memory and processes its
	// own; its utilization is unknown (nvidia-smi reports none per
	// instance).
	MIGInstance *MIGInstance `json:"mig_instance,omitempty"`
}

// MIGInstance says which slice of which GPU a MIG instance's entry is.
type MIGInstance struct {
	// Parent is the index of the GPU it is a slice of.
	Parent int `json:"parent"`
	// Device is nvidia-smi's MIG device index on that GPU ("Device N" in
	// `nvidia-smi -L`, <mig_device><index> in `-q -x`).
	Device            int `json:"device"`
	GPUInstanceID     int `json:"gpu_instance_id"`
	ComputeInstanceID int `json:"compute_instance_id"`
	// Profile is the instance's profile, "1g.10gb" ("" when `nvidia-smi
	// -L` did not list it).
	Profile string `json:"profile,omitempty"`
	// Unusable, when set, says why no task may be given this instance
	// (no UUID from `nvidia-smi -L`, or one a claim cannot be named by).
	Unusable string `json:"unusable,omitempty"`
}

// Process is a compute process running on a GPU.
type Process struct {
	PID int `json:"pid"`
	// User owns the process; "" when the host could not tell (the process
	// ended between nvidia-smi and ps, or lives in another PID namespace).
	User          string `json:"user"`
	Command       string `json:"command"`
	UsedMemoryMiB *int   `json:"used_memory_mib"`
	// Intruder: the GPU is held by a tfhive run's claim and this process
	// does not descend from the claim's holder (another user's job, or
	// one started by hand beside the run).
	Intruder bool `json:"intruder,omitempty"`
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
	// ErrDescriptors is this machine's fault, not the host's: the client
	// ran out of file descriptors (EMFILE, ENFILE) reaching it.
	ErrDescriptors ErrorKind = "descriptors"
	// ErrLost: the host was lost during the run, and left out since.
	ErrLost ErrorKind = "lost"
)

// HostError is why a host is unusable, with the host it concerns.
type HostError struct {
	Kind    ErrorKind `json:"kind"`
	Message string    `json:"message"`
	Hint    string    `json:"hint,omitempty"`
}

func (e *HostError) Error() string { return e.Message }
