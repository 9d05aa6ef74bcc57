package commands

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/notify"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// A run's reproducibility record, repro.json in its log dir
// (record.Repro): what `tfhive rerun` needs to run it again, and what it
// compares. It is written once, when the log dir is made as the first
// tasks are about to start, by whichever tfhive runs the run (a detached
// run's keeper). Nothing in it may fail the run: git missing or slow, or
// a log dir that cannot take the file, is a warning at most.

// Version is tfhive's version: dev, or dev-COMMIT for a build from a git
// work tree.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

// launchState is what Run learns of where it was started, while it
// probes: the directory and, in the background, its git state.
type launchState struct {
	dir string
	git chan *record.ReproGit
}

func startLaunchState() *launchState {
	dir, _ := os.Getwd()
	ls := &launchState{dir: dir, git: make(chan *record.ReproGit, 1)}
	go func() { ls.git <- codesync.GitState(dir) }()
	return ls
}

// gitOf waits for the git state.
func (ls *launchState) gitOf() *record.ReproGit {
	g := <-ls.git
	ls.git <- g
	return g
}

// versionRE is what a version read from a host must look like to be
// recorded: anything else is another kind of text, left out.
var versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)

func cleanVersion(s string) string {
	if versionRE.MatchString(s) {
		return s
	}
	return ""
}

// newRepro is the record of the run about to start: its options (with
// its paths absolute, so that a rerun from elsewhere reads the same
// files), where the hosts came from, the plan's hosts as the probe saw
// them, the --sync tree and the launch dir's git state.
func newRepro(o RunOptions, as runAs, id string, ls *launchState, fleet *probe.Fleet, tree *codesync.Tree,
	plan *schedule.Plan, inv inventory.Inventory, checked map[string]doctor.Host) *record.Repro {
	req := o
	abs := func(p *string) {
		if *p != "" && !strings.HasPrefix(*p, "~") {
			if a, err := filepath.Abs(*p); err == nil {
				*p = a
			}
		}
	}
	abs(&req.Hosts.Hostfile)
	abs(&req.Hosts.SSHConfig)
	abs(&req.Job.Sync)
	abs(&req.LogDir)
	ho := hostsOptions(o.Hosts)
	origin := hosts.Source(ho)
	r := &record.Repro{
		Format: record.ReproFormat, RunID: id, Version: Version(),
		Args: notify.RedactArgs(keeper.Args()), Command: o.Job.Command, LaunchDir: ls.dir,
		HostsFrom: origin.Describe(ho.Home), Fleet: []string{}, Hosts: []record.ReproHost{},
		Git: ls.gitOf(),
	}
	r.RerunOf = as.rerunOf
	switch origin.Kind {
	case hosts.FromLocal:
		// The same machine again, whatever hosts file appears here.
		req.Hosts.Local = true
	case hosts.FromFlags:
	default:
		// A file: --hosts, $TFHIVE_HOSTS, ./hosts.yaml, the per-user
		// file or --hostfile; a rerun reads that one.
		file := origin.File
		abs(&file)
		r.HostsFile = file
		if origin.Kind == hosts.FromHostfile {
			req.Hosts.Hostfile = file
		} else {
			req.Hosts.File = file
		}
	}
	r.Request = reproRequest(req)
	for _, h := range fleet.Hosts {
		r.Fleet = append(r.Fleet, h.Name)
	}
	for _, name := range plan.Hosts() {
		rh := record.ReproHost{Name: name}
		for _, h := range inv.Hosts {
			if h.Name == name {
				rh.Driver, rh.CUDA = cleanVersion(h.Driver), cleanVersion(h.CUDA)
			}
		}
		if d, ok := checked[name]; ok && d.Python.Version != nil {
			rh.Python = cleanVersion(*d.Python.Version)
		}
		r.Hosts = append(r.Hosts, rh)
	}
	if tree != nil {
		r.Code = &record.ReproCode{Dir: req.Job.Sync, Hash: tree.Hash}
	}
	return r
}

// writeRepro writes the record into the run's log dir; a log dir that
// cannot take it costs the run nothing but a warning.
func writeRepro(logDir string, r *record.Repro, stderr io.Writer) {
	if err := rundir.WriteJSON(filepath.Join(logDir, rundir.Repro), r); err != nil {
		fmt.Fprintf(stderr, "tfhive: warning: the run's record of how it was started (%s): %v\n", rundir.Repro, err)
	}
}
