package commands

import (
	"io"
	"time"

	"github.com/tfhive/tfhive/probe"
)

// Streams are where a command writes: its output, and tfhive's own lines
// (warnings, progress, task output under --json).
type Streams struct {
	Stdout, Stderr io.Writer
	// Color is --color: auto (""), always or never (color.go).
	Color string
}

// HostOptions choose the hosts and how to reach them; every command takes
// them.
type HostOptions struct {
	Hosts             []string // -H values, before splitting at commas
	File              string   // --hosts or $TFHIVE_HOSTS; "" for ./hosts.yaml, else the per-user file, when they exist
	Hostfile          string   // --hostfile: an MPI-style hostfile
	SSHConfig         string
	AcceptNewHostKeys bool
	// Quiet keeps the keys --accept-new-host-keys adds unsaid (run -q,
	// as ssh -q): OpenSSH's "Permanently added" line is printed otherwise.
	Quiet          bool
	ConnectTimeout time.Duration
	CommandTimeout time.Duration
	Parallel       int
	// Dial, when set, opens the hosts' connections instead of SSH (and of
	// this machine's sh for the no-hosts default): no flag sets it; tests
	// give fake hosts (probe/hosttest). nil: the real transport.
	Dial probe.Dialer `json:"-"`
	// Coalesce, when set, shares the fleet's probes with other runs' (a
	// sweep's trials: probe.Coalescer); no flag sets it.
	Coalesce *probe.Coalescer `json:"-"`
	// Local: no hosts file however the directory, this machine without
	// SSH (a rerun of a run that had none); no flag sets it.
	Local bool
}

// Availability decides which GPUs count as free, for status and plans.
type Availability struct {
	MaxUtilPct int
	MaxMemMiB  int
	Exclude    []string // --exclude host[:i,j] values
}

// Job describes the job, for plan and run.
type Job struct {
	Availability
	Framework     string
	PS, Workers   int
	Chief         bool
	Evaluator     bool
	GPUsPerWorker int
	GPUsPerPS     int
	Strategy      string
	// RanksPerHost is torchrun's --nproc-per-node (the cli sets Workers
	// and Strategy to match it with --nnodes); 0: not given.
	RanksPerHost int
	PortRange    string // LO-HI
	TFFlags      bool
	NIC          string   // --nic: "", "auto" or an interface name
	Priority     string   // --priority: low, normal (""), high
	Name         string   // run id; "" for a new, time-based one
	Command      []string // after --
	// Sync is the --sync DIR to make present on every host used ("":
	// none); SyncExclude its --sync-exclude patterns.
	Sync        string
	SyncExclude []string
}
