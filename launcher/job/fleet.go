package job

import (
	"context"
	"syscall"

	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
)

// Fleet is the hosts a run probes and starts on, over one connection
// each (probe.Fleet, through the caller; a scripted fake in tests).
type Fleet interface {
	// Probe probes every host once; an error ends the run (an interrupted
	// probe, or one whose answers forbid going on).
	Probe(ctx context.Context) (inventory.Inventory, error)
	// Executors are the open connections, by host name.
	Executors() map[string]remote.Executor
	// KeepSpares keeps the spare sessions of these hosts only.
	KeepSpares(hosts []string)
	// Leave takes a host out of the fleet for the rest of the run.
	Leave(host, why string)
	// NoProgress stops the probe's progress line: a waiting run's line
	// says it all.
	NoProgress()
}

// FleetOf is f as a run sees it (Fleet): probed as every command probes
// (ProbeAll).
func FleetOf(f *probe.Fleet) Fleet { return probeFleet{f} }

type probeFleet struct{ f *probe.Fleet }

func (p probeFleet) Probe(ctx context.Context) (inventory.Inventory, error) {
	return ProbeAll(ctx, p.f)
}
func (p probeFleet) Executors() map[string]remote.Executor { return Executors(p.f) }
func (p probeFleet) KeepSpares(hosts []string)             { p.f.KeepSpares(hosts) }
func (p probeFleet) Leave(host, why string)                { p.f.Leave(host, why) }
func (p probeFleet) NoProgress()                           { p.f.NoProgress() }

// ProbeAll probes every host once, as every command does; an
// interrupted probe is no inventory.
func ProbeAll(ctx context.Context, fleet *probe.Fleet) (inventory.Inventory, error) {
	inv := fleet.Probe(ctx)
	if err := ctx.Err(); err != nil {
		return inv, err
	}
	if err := outOfDescriptors(inv); err != nil {
		return inv, err
	}
	// A malformed policy is never silently passed over: its admin meant
	// something by it.
	for _, h := range inv.Hosts {
		if h.PolicyError != "" {
			return inv, &UsageError{Msg: h.Name + ": policy: " + h.PolicyError, Fix: "the host's admin must fix it; tfhive reads it strictly"}
		}
	}
	return inv, nil
}

// outOfDescriptors is the error for a probe that ran out of file
// descriptors on this machine, or nil: one line naming the limit, not a
// host list of "too many open files".
func outOfDescriptors(inv inventory.Inventory) error {
	for _, h := range inv.Hosts {
		if h.Err != nil && h.Err.Kind == inventory.ErrDescriptors {
			var rl syscall.Rlimit
			syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
			return &DescriptorsError{Limit: rl.Cur, Hosts: len(inv.Hosts)}
		}
	}
	return nil
}

// Executors are the fleet's connections by host name.
func Executors(fleet *probe.Fleet) map[string]remote.Executor {
	execs := map[string]remote.Executor{}
	for i, h := range fleet.Hosts {
		if e := fleet.Executor(i); e != nil {
			execs[h.Name] = e
		}
	}
	return execs
}
