package record

import (
	"encoding/json"
)

// ReproFormat is the format of the Repro this tfhive writes; `tfhive
// rerun` refuses any other.
const ReproFormat = 1

// MaxReproSize bounds repro.json as it is read back: a command line, the
// run's options and one line per host fit in far less.
const MaxReproSize = 4 << 20

// Repro is what it would take to run a run again: repro.json in its log
// dir, written once its log dir is made, as its tasks are about to start
// (a detached run's keeper writes it), and read by `tfhive rerun`. What
// it says of the hosts and the launch dir is what tfhive saw then.
type Repro struct {
	Format int    `json:"format"`
	RunID  string `json:"run_id"`
	// RerunOf is the run this one ran again (tfhive rerun); "" otherwise.
	RerunOf string `json:"rerun_of,omitempty"`
	Version string `json:"tfhive_version"`
	// Args is tfhive's command line as it was typed (after the program's
	// name): for people; a sweep's trial has its sweep's.
	Args []string `json:"args"`
	// Command is the task's command line (a sweep trial's, substituted).
	Command []string `json:"command"`
	// Request is the run's options, as launcher/commands writes and reads
	// them (paths made absolute): what rerun runs again.
	Request json.RawMessage `json:"request"`
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
