package job

import (
	"context"

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
