package commands

import (
	"context"
	"fmt"

	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/inventory"
)

// DoctorOptions are `tfhive doctor`'s.
type DoctorOptions struct {
	Streams
	Hosts          HostOptions
	Workdir, Setup string   // override the hosts file's when not empty
	Imports        []string // --import: modules beyond tensorflow and torch
	JSON           bool
	// Sync is --sync DIR: the tree is made present on every host, as by
	// run, and checked there; SyncExclude its --sync-exclude patterns.
	Sync        string
	SyncExclude []string
}

// Doctor checks what a task would meet on every host (Python, modules,
// driver, CUDA libraries, disk) and prints it as one table, marking what
// differs from most hosts. Hosts that differ are a *DifferError, after
// the table.
func Doctor(ctx context.Context, o DoctorOptions) error {
	mods, err := doctorModules(o.Imports)
	if err != nil {
		return err
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	// It shows the hosts: it says which look alike (clones).
	fleet.SayClones()
	tree, err := prepareSync(o.Sync, o.SyncExclude, "", o.Stderr)
	if err != nil {
		return err
	}
	defer fleet.Close()
	// Each probe session goes on as a supervisor command, of which the
	// check is then the one stage: it costs a round trip, no session.
	fleet.KeepSessions(supervisor.Command)
	if tree != nil {
		fleet.LookForCode(tree.Hash)
	}
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	dopts := doctor.Options{
		Modules: mods, Workdir: o.Workdir, Setup: o.Setup,
		Timeout: max(o.Hosts.CommandTimeout, doctor.MinTimeout), Parallel: o.Hosts.Parallel,
	}
	// A host the tree could not be sent to is not checked: the error says
	// why, as the run's would.
	failed := map[string]string{}
	if tree != nil {
		dopts.Code, failed, err = newSyncer(tree, o.Hosts.Parallel, o.Stderr).SendAll(ctx, job.FleetOf(fleet), inv)
		if err != nil {
			return err
		}
	}
	var todo []inventory.HostInventory
	for _, h := range inv.Hosts {
		if _, ok := failed[h.Name]; !ok {
			todo = append(todo, h)
		}
	}
	checked := doctor.Check(ctx, todo, job.Executors(fleet), dopts)
	if err := ctx.Err(); err != nil {
		return err
	}
	hosts := make([]doctor.Host, 0, len(inv.Hosts))
	for _, h := range inv.Hosts {
		if why, ok := failed[h.Name]; ok {
			hosts = append(hosts, doctor.Host{Host: h.Name, Error: "--sync: " + why})
			continue
		}
		hosts = append(hosts, checked[0])
		checked = checked[1:]
	}
	rep := doctor.Compare(hosts, mods)
	if o.JSON {
		err = doctor.WriteJSON(o.Stdout, rep)
	} else {
		err = doctor.Write(o.Stdout, rep)
	}
	if err != nil {
		return err
	}
	if rep.Differs {
		return &DifferError{Problems: rep.Problems()}
	}
	return job.Unreachable(inv)
}

// doctorModules validates --import before any host is contacted: the
// names travel to the hosts as Python's arguments.
func doctorModules(imports []string) ([]string, error) {
	for _, m := range imports {
		if !doctor.ValidModule(m) {
			return nil, &UsageError{Msg: fmt.Sprintf("--import %q is not a Python module name", m), Fix: "name a module as Python imports it, e.g. --import numpy or --import torch.distributed"}
		}
	}
	return doctor.Modules(imports), nil
}

// DifferError is `tfhive doctor` finding hosts that differ, or that could
// not be checked; the table, already printed, marks where.
type DifferError struct{ Problems []doctor.Problem }

func (e *DifferError) Error() string { return "the hosts differ: " + job.FirstProblem(e.Problems) }

// Details lists every problem when there are several.
func (e *DifferError) Details() []string { return job.MoreProblems(e.Problems) }
