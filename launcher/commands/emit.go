package commands

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/schedule"
)

// EmitOptions are `tfhive plan --emit`'s own flags and the run flags that
// carry over to a cluster manager.
type EmitOptions struct {
	Target                 string // "": plan as usual
	Env                    []string
	Workdir, Setup, LogDir string
	Grace, Timeout         time.Duration
	Image, Namespace       string
	Secret                 string
	Nodes, GPUsPerNode     int
	// Given names every flag given on the command line, without dashes:
	// --emit refuses those without a counterpart on its target, and plan
	// without --emit those that only --emit takes.
	Given []string
}

// EmitTargets are --emit's values.
var EmitTargets = emit.Targets

// emitJob prints the job for plan --emit's target; handled is false when
// plan was not asked to emit anything. Nothing is probed: the cluster
// manager places the tasks.
func emitJob(o PlanOptions) (handled bool, err error) {
	e := o.Emit
	if e.Target == "" {
		for _, f := range emit.EmitOnly {
			if slices.Contains(e.Given, f) {
				return true, &UsageError{Msg: fmt.Sprintf("--%s only applies with --emit", f), Fix: "tfhive run takes it; plan takes it with --emit slurm, tfjob or pytorchjob"}
			}
		}
		return false, nil
	}
	j := o.Job
	lo, hi, err := schedule.ParsePortRange(j.PortRange)
	if err != nil {
		return true, err
	}
	req := schedule.Request{
		Framework:     j.Framework,
		PS:            j.PS,
		Workers:       j.Workers,
		Chief:         j.Chief,
		Evaluator:     j.Evaluator,
		GPUsPerWorker: j.GPUsPerWorker,
		GPUsPerPS:     j.GPUsPerPS,
		Strategy:      j.Strategy,
		PortLo:        lo,
		PortHi:        hi,
		Command:       j.Command,
		TFFlags:       j.TFFlags,
		RunID:         j.Name,
	}
	if req.RunID == "" {
		req.RunID = newRunID(time.Now())
	}
	return true, emit.Write(o.Stdout, emit.Options{
		Target: e.Target, Request: req, NameGiven: j.Name != "",
		Env: e.Env, Workdir: e.Workdir, Setup: e.Setup, LogDir: e.LogDir,
		Grace: e.Grace, Timeout: e.Timeout,
		Image: e.Image, Namespace: e.Namespace, Secret: e.Secret,
		Nodes: e.Nodes, GPUsPerNode: e.GPUsPerNode,
		Given: e.Given,
	})
}
