package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/claim"
)

// Placement strategies.
const (
	// StrategySpread deals workers round-robin over hosts, spreading load.
	StrategySpread = "spread"
	// StrategyPack fills a host before using the next, so all-reduce
	// crosses fewer network links.
	StrategyPack = "pack"
)

// Frameworks, the values of --framework.
const (
	// FrameworkTF gives every task TF_CONFIG: a ClusterSpec of ps, chief
	// and worker tasks, each with its own port, plus an optional evaluator.
	// Its plans say "framework": "tensorflow".
	FrameworkTF = "tf"
	// FrameworkTorch gives every task the environment torchrun gives a
	// script: the chief (if any) and the workers are the ranks of one
	// world that meets at rank 0's MASTER_ADDR:MASTER_PORT.
	FrameworkTorch = "torch"
)

// Defaults of the request flags, for launcher/cli's flag definitions.
const (
	DefaultWorkers       = 1
	DefaultGPUsPerWorker = 1
	DefaultMaxUtilPct    = 10
	DefaultMaxMemMiB     = 1024
	DefaultPortLo        = 2222
	DefaultPortHi        = 2400
	DefaultPortRange     = "2222-2400"
)

// Bounds of a request, checked by Validate before anything is planned:
// a typo (--workers 100000000) fails in a line instead of planning
// millions of tasks for minutes and gigabytes. Far above any fleet tfhive
// drives over SSH: a task's GPUs are on one host.
const (
	// MaxTasks bounds the tasks of a run (ps, workers, chief and
	// evaluator together), and a host's torch ranks.
	MaxTasks = 1 << 16
	// MaxGPUsPerTask bounds --gpus-per-worker and --gpus-per-ps.
	MaxGPUsPerTask = 1024
)

// Request is what the user asked `plan` or `run` for.
type Request struct {
	Availability
	Framework        string // FrameworkTF (default) or FrameworkTorch
	PS, Workers      int
	Chief, Evaluator bool
	// GPUsPerWorker is also what the chief and the evaluator get; 0 = CPU.
	GPUsPerWorker, GPUsPerPS int
	Strategy                 string // StrategySpread (default) or StrategyPack
	PortLo, PortHi           int    // inclusive
	Command                  []string
	TFFlags                  bool
	RunID                    string
	// Code, when not nil, is the --sync tree: {code_dir} may be used, and
	// the plan says where the tree is on each host.
	Code *Code
	// NIC is --nic: "" (the hosts' cluster addresses as they are), NICAuto
	// or an interface name (see nic.go).
	NIC string
	// Priority is --priority: PriorityLow, PriorityNormal ("" too) or
	// PriorityHigh; the hosts' policies say who may use high.
	Priority string
	// QueueSince, when set, is when the run began to wait: runs waiting
	// since earlier (or at a higher priority) go first (queue.go).
	QueueSince time.Time
	// NoBackfill (a sweep's trial) never starts on GPUs that a run waiting
	// ahead of it could use once more of them free up: see applyQueue.
	NoBackfill bool
	// Ending are the runs (EndingKey) this waiting run saw let go of some
	// of their GPUs while it waited: the rest of theirs free in a moment,
	// as a run's hosts let go one after the other. A run ahead that fits
	// once they have keeps what is free of what it would take (see
	// applyQueue), so that a run behind does not slip in between.
	Ending map[string]bool
	// Settling are GPUs (by host name, then index) whose claim this
	// waiting run sees held by no run's label now, where its last probe
	// saw them free or a run's: a claim being taken (a run ahead writes
	// its label just after its lock) or let go (a run's supervisor drops
	// its label just before its lock). Like Ending's, they count as free
	// for a run ahead; a claim unlabelled at two probes in a row is not
	// settling (an older tfhive's, or a colleague's own lock).
	Settling map[string][]int
	// RanksPerHost, when not 0, is torchrun's --nproc-per-node (torch,
	// pack only): every host used holds exactly this many ranks, and a
	// host with fewer free GPUs than they need is passed over.
	RanksPerHost int
	// Timeout is the run's --timeout (0: none): a run that ends before
	// another user's reservation begins may use its GPUs meanwhile.
	Timeout time.Duration
	// Grace is the run's --grace: a run stopped at its timeout holds its
	// GPUs until its tasks are killed, Grace after the stop signal.
	Grace time.Duration
}

// NewRequest returns a request with every flag at its documented default:
// one worker with one GPU, no ps.
func NewRequest() Request {
	r := Request{
		Availability:  Availability{MaxUtilPct: DefaultMaxUtilPct, MaxMemMiB: DefaultMaxMemMiB},
		Workers:       DefaultWorkers,
		GPUsPerWorker: DefaultGPUsPerWorker,
	}
	r.SetDefaults()
	return r
}

// SetDefaults fills only the fields whose zero value cannot be a choice:
// Framework, Strategy and the port range. Counts and thresholds are left alone because
// 0 is meaningful there (--workers 0 with --chief, --gpus-per-worker 0 for
// CPU, --max-util 0 for "idle only"); take their defaults from NewRequest or
// the Default constants.
func (r *Request) SetDefaults() {
	if r.Framework == "" {
		r.Framework = FrameworkTF
	}
	if r.Strategy == "" {
		r.Strategy = StrategySpread
	}
	if r.PortLo == 0 && r.PortHi == 0 {
		r.PortLo, r.PortHi = DefaultPortLo, DefaultPortHi
	}
}

// Validate finds the usage errors that need no host to be seen, so that a
// typo fails before any SSH connection is made. Empty Command is allowed
// (`plan` can show placement alone); `run` must check for it itself.
func (r *Request) Validate() error {
	switch r.Priority {
	case "", PriorityLow, PriorityNormal, PriorityHigh:
	default:
		return usageErr("", "--priority must be low, normal or high, got %q", r.Priority)
	}
	if err := r.ValidateCounts(); err != nil {
		return err
	}
	if r.MaxUtilPct < 0 || r.MaxUtilPct > 100 {
		return usageErr("", "--max-util must be between 0 and 100, got %d", r.MaxUtilPct)
	}
	if r.RanksPerHost < 0 {
		return usageErr("", "--nproc-per-node must be 1 or more, got %d", r.RanksPerHost)
	}
	if r.Timeout < 0 {
		return usageErr("", "--timeout must not be negative, got %s", r.Timeout)
	}
	switch r.Framework {
	case FrameworkTF:
		if r.RanksPerHost > 0 {
			return usageErr("a TensorFlow run places ps and workers itself: give --workers and --strategy",
				"--nnodes and --nproc-per-node are torchrun's: they need --framework torch")
		}
	case FrameworkTorch:
		if err := r.validateTorch(); err != nil {
			return err
		}
	default:
		return usageErr("use --framework tf or --framework torch", "unknown framework %q", r.Framework)
	}
	if r.Workers == 0 && !r.Chief {
		return usageErr("ask for --workers 1 or more, or --chief", "nothing to train: no workers and no chief")
	}
	switch r.Strategy {
	case StrategySpread, StrategyPack:
	default:
		return usageErr("use --strategy spread or --strategy pack", "unknown strategy %q", r.Strategy)
	}
	if err := checkPortRange(r.PortLo, r.PortHi); err != nil {
		return err
	}
	if err := validNIC(r.NIC); err != nil {
		return err
	}
	if r.TFFlags && (r.Chief || r.Evaluator) {
		role := "--chief"
		if !r.Chief {
			role = "--evaluator"
		}
		return usageErr("TF1 between-graph scripts have no chief or evaluator; read TF_CONFIG instead of --tf-flags",
			"--tf-flags cannot be used with %s", role)
	}
	if r.RunID == "" {
		return usageErr("", "no run id")
	}
	if !claim.ValidRunID(r.RunID) {
		// It ends up in environment variables, log file names, remote
		// shell commands and claim labels: a run that kill, wait, attach
		// or logs would refuse must not start.
		return usageErr(claim.RunIDRule, "bad run id %q", r.RunID)
	}
	return checkCommand(r.Command, r.Framework, r.Code != nil)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ValidateCounts checks Validate's bounds on the request's counts alone
// (none negative; tasks, ranks and GPUs per task within MaxTasks and
// MaxGPUsPerTask): what must hold before anything is made per task, even
// a list of the tasks' ids.
func (r *Request) ValidateCounts() error {
	for _, c := range []struct {
		flag string
		v    int
	}{
		{"--ps", r.PS}, {"--workers", r.Workers},
		{"--gpus-per-worker", r.GPUsPerWorker}, {"--gpus-per-ps", r.GPUsPerPS},
		{"--max-mem", r.MaxMemMiB},
	} {
		if c.v < 0 {
			return usageErr("", "%s must be 0 or more, got %d", c.flag, c.v)
		}
	}
	for _, c := range []struct {
		flag   string
		v, max int
	}{
		{"--ps", r.PS, MaxTasks}, {"--workers", r.Workers, MaxTasks}, {"--nproc-per-node", r.RanksPerHost, MaxTasks},
		{"--gpus-per-worker", r.GPUsPerWorker, MaxGPUsPerTask}, {"--gpus-per-ps", r.GPUsPerPS, MaxGPUsPerTask},
	} {
		if c.v > c.max {
			return usageErr("", "%s must be at most %d, got %d", c.flag, c.max, c.v)
		}
	}
	if n := r.PS + r.Workers + b2i(r.Chief) + b2i(r.Evaluator); n > MaxTasks {
		return usageErr("", "%d tasks (ps, workers, chief and evaluator): at most %d", n, MaxTasks)
	}
	return nil
}

// validateTorch refuses the TensorFlow-only parts of a request: a torch
// world is its ranks, all alike, with nothing outside it.
func (r *Request) validateTorch() error {
	const rendezvous = "torch ranks read MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE from the environment, or take {rank} {world_size} {master_addr} {master_port} in the command"
	for _, c := range []struct {
		flag string
		set  bool
		hint string
	}{
		{"--ps", r.PS > 0, "a torch world has no parameter servers: every rank is a worker; ask for --workers N (--chief adds a rank 0 of its own)"},
		{"--gpus-per-ps", r.GPUsPerPS > 0, "a torch world has no parameter servers; give the ranks GPUs with --gpus-per-worker"},
		{"--evaluator", r.Evaluator, "a torch world has no evaluator outside it: evaluate in the training script, or start a separate run"},
		{"--tf-flags", r.TFFlags, rendezvous},
	} {
		if c.set {
			return usageErr(c.hint, "%s cannot be used with --framework torch", c.flag)
		}
	}
	if r.RanksPerHost > 0 && r.Strategy != StrategyPack {
		return usageErr("--nproc-per-node fills each host it uses; leave --strategy out", "--nproc-per-node cannot be used with --strategy %s", r.Strategy)
	}
	if r.RanksPerHost > 0 && r.GPUsPerWorker == 0 {
		return usageErr("--nproc-per-node K takes K ranks' GPUs on each host: give --gpus-per-worker 1 or more", "--nproc-per-node cannot be used with --gpus-per-worker 0")
	}
	return nil
}

// ParsePortRange reads "LO-HI" (inclusive) or a single port "P".
func ParsePortRange(s string) (lo, hi int, err error) {
	bad := usageErr("write --port-range "+DefaultPortRange, "bad --port-range %q", s)
	loS, hiS, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if lo, err = strconv.Atoi(loS); err != nil {
		return 0, 0, bad
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(hiS); err != nil {
			return 0, 0, bad
		}
	}
	if err := checkPortRange(lo, hi); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}

func checkPortRange(lo, hi int) error {
	if lo < 1 || hi > 65535 || lo > hi {
		return usageErr("ports are 1-65535, low first, like "+DefaultPortRange,
			"bad --port-range %s", fmt.Sprintf("%d-%d", lo, hi))
	}
	return nil
}
