package record

import (
	"time"
)

// ReproFormat is the format of the Repro this tfhive writes, its
// "format" field: the record's version. `tfhive rerun` reads this one
// and ReproFormatGoNames (ReadRepro), and refuses any other.
const ReproFormat = 2

// MaxReproSize bounds repro.json as it is read back: a command line, the
// run's options and one line per host fit in far less.
const MaxReproSize = 4 << 20

// Repro is what it would take to run a run again: repro.json in its log
// dir, written once its log dir is made, as its tasks are about to start
// (a detached run's keeper writes it), and read by `tfhive rerun`. What
// it says of the hosts and the launch dir is what tfhive saw then.
type Repro struct {
	// Format is the record's version: ReproFormat as written, ReproFormatGoNames
	// for the first (ReadRepro reads both into this struct).
	Format int    `json:"format"`
	RunID  string `json:"run_id"`
	// RerunOf is the run this one ran again (tfhive rerun); "" otherwise.
	RerunOf string `json:"rerun_of,omitempty"`
	Version string `json:"tfhive_version"`
	// Args is tfhive's command line as it was typed (after the program's
	// name), --notify's values redacted (a webhook's URL is its secret):
	// for people; a sweep's trial has its sweep's.
	Args []string `json:"args"`
	// Command is the task's command line (a sweep trial's, substituted).
	Command []string `json:"command"`
	// Request is the run's options (paths made absolute): what rerun
	// runs again.
	Request ReproRequest `json:"request"`
	// LaunchDir is the directory tfhive was started in.
	LaunchDir string `json:"launch_dir"`
	// HostsFrom says where the hosts came from, as tfhive says it ("-H",
	// "./hosts.yaml", "$TFHIVE_HOSTS (FILE)", "this machine, without
	// SSH"); HostsFile is the file read, absolute, when there was one.
	HostsFrom string `json:"hosts_from"`
	HostsFile string `json:"hosts_file,omitempty"`
	// Fleet names every host the hosts gave, in order; Hosts are those
	// the first plan used, with what the probe saw of them.
	Fleet []string    `json:"fleet"`
	Hosts []ReproHost `json:"hosts"`
	// Code is the --sync tree: its directory (absolute) and hash; absent
	// without --sync.
	Code *ReproCode `json:"code,omitempty"`
	// Git is the launch dir's git commit; absent outside a git work tree
	// or without git.
	Git *ReproGit `json:"git,omitempty"`
}

// ReproHost is one host of the plan as the probe saw it. Versions are
// empty when unknown: no nvidia-smi, or --check (which reads Python's)
// not given.
type ReproHost struct {
	Name   string `json:"name"`
	Driver string `json:"driver_version,omitempty"`
	CUDA   string `json:"cuda_version,omitempty"`
	Python string `json:"python_version,omitempty"`
}

// ReproCode is the --sync tree of a run.
type ReproCode struct {
	Dir  string `json:"dir"`
	Hash string `json:"hash"`
}

// ReproGit is the launch dir's git state. Dirty is nil when git could
// not say in time.
type ReproGit struct {
	Commit string `json:"commit"`
	Dirty  *bool  `json:"dirty,omitempty"`
}

// ReproRequest is a run's options as its record keeps them: what `tfhive
// run`'s flags gave, with the names this record chooses (launcher/commands
// converts its own options to and from it), so that renaming an option in
// the code leaves the records as they are. Durations are nanoseconds, as
// the summary's. A field added here is a field a rerun runs with: one that
// an older record lacks is zero there, as it was before it existed.
type ReproRequest struct {
	Hosts ReproHosts `json:"hosts"`
	Job   ReproJob   `json:"job"`
	// Env holds --env values: K=V, or K for the value tfhive had.
	Env            []string      `json:"env"`
	Workdir        string        `json:"workdir"`
	Setup          string        `json:"setup"`
	LogDir         string        `json:"log_dir"`
	Grace          time.Duration `json:"grace_ns"`
	Timeout        time.Duration `json:"timeout_ns"`
	Wait           time.Duration `json:"wait_ns"`
	Reconnect      time.Duration `json:"reconnect_ns"`
	Unattended     time.Duration `json:"unattended_ns"`
	Detach         bool          `json:"detach"`
	Quiet          bool          `json:"quiet"`
	JSON           bool          `json:"json"`
	Check          bool          `json:"check"`
	Imports        []string      `json:"imports"`
	Capture        []string      `json:"capture"`
	CaptureFrom    string        `json:"capture_from"`
	Sample         time.Duration `json:"sample_ns"`
	IdleStop       time.Duration `json:"idle_stop_ns,omitempty"`
	Restarts       int           `json:"restarts"`
	RestartOn      string        `json:"restart_on"`
	RestartBackoff time.Duration `json:"restart_backoff_ns"`
	// StopSignal, Requeue, RequeueSet and RequeueOn are --stop-signal,
	// --requeue (given or not) and --requeue-on; absent in a record
	// older than them.
	StopSignal string        `json:"stop_signal,omitempty"`
	Requeue    bool          `json:"requeue,omitempty"`
	RequeueSet bool          `json:"requeue_set,omitempty"`
	RequeueOn  string        `json:"requeue_on,omitempty"`
	HangAfter  time.Duration `json:"hang_after_ns"`
	OnHang     string        `json:"on_hang"`
	HangNative bool          `json:"hang_native"`
}

// ReproHosts are the options that chose the hosts and how to reach them.
type ReproHosts struct {
	Hosts             []string      `json:"hosts"` // -H values, before splitting at commas
	File              string        `json:"file"`
	Hostfile          string        `json:"hostfile"`
	SSHConfig         string        `json:"ssh_config"`
	AcceptNewHostKeys bool          `json:"accept_new_host_keys"`
	Quiet             bool          `json:"quiet"`
	ConnectTimeout    time.Duration `json:"connect_timeout_ns"`
	CommandTimeout    time.Duration `json:"command_timeout_ns"`
	Parallel          int           `json:"parallel"`
	// Local: this machine without SSH, whatever hosts file there is now.
	Local bool `json:"local"`
}

// ReproJob is the job: which GPUs count as free, the tasks, the command
// and the --sync tree.
type ReproJob struct {
	MaxUtilPct    int      `json:"max_util_pct"`
	MaxMemMiB     int      `json:"max_mem_mib"`
	Exclude       []string `json:"exclude"`
	Framework     string   `json:"framework"`
	PS            int      `json:"ps"`
	Workers       int      `json:"workers"`
	Chief         bool     `json:"chief"`
	Evaluator     bool     `json:"evaluator"`
	GPUsPerWorker int      `json:"gpus_per_worker"`
	GPUsPerPS     int      `json:"gpus_per_ps"`
	Strategy      string   `json:"strategy"`
	RanksPerHost  int      `json:"ranks_per_host"`
	PortRange     string   `json:"port_range"`
	TFFlags       bool     `json:"tf_flags"`
	NIC           string   `json:"nic"`
	Priority      string   `json:"priority"`
	Name          string   `json:"name"`
	Command       []string `json:"command"`
	Sync          string   `json:"sync"`
	SyncExclude   []string `json:"sync_exclude"`
}
