package commands

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/sweep"
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
	// Params, Random, Seed and MaxParallel make a sweep's job array
	// (--param, --random, --seed, --max-parallel; Slurm only).
	Params      []string
	Random      int
	Seed        int64
	MaxParallel int
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
		for _, f := range emit.SweepOnly {
			if slices.Contains(e.Given, f) {
				return true, &UsageError{Msg: fmt.Sprintf("--%s is for --emit slurm: plan prints a sweep as a Slurm job array", f),
					Fix: "add --emit slurm: one array task per trial, its parameters from the array index"}
			}
		}
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
	sw, err := sweepOf(e, req.RunID)
	if err != nil {
		return true, err
	}
	return true, emit.Write(o.Stdout, emit.Options{
		Sweep: sw, MaxParallel: e.MaxParallel,
		Target: e.Target, Request: req, NameGiven: j.Name != "",
		Env: e.Env, Workdir: e.Workdir, Setup: e.Setup, LogDir: e.LogDir,
		Grace: e.Grace, Timeout: e.Timeout,
		Image: e.Image, Namespace: e.Namespace, Secret: e.Secret,
		Nodes: e.Nodes, GPUsPerNode: e.GPUsPerNode,
		Given: e.Given,
	})
}

// sweepOf is the sweep --param, --random and --seed give, named name;
// nil without --param.
func sweepOf(e EmitOptions, name string) (*record.Sweep, error) {
	if len(e.Params) == 0 {
		for _, f := range []string{"random", "seed", "max-parallel"} {
			if slices.Contains(e.Given, f) {
				return nil, &UsageError{Msg: fmt.Sprintf("--%s is for a sweep: give its --param NAME=V1,V2,…", f)}
			}
		}
		return nil, nil
	}
	if slices.Contains(e.Given, "seed") && e.Random == 0 {
		return nil, &UsageError{Msg: "--seed is for --random N: the grid takes every combination"}
	}
	if e.Random < 0 || e.MaxParallel < 0 {
		return nil, &UsageError{Msg: "--random and --max-parallel must be 0 or more"}
	}
	s := &record.Sweep{Name: name, Random: e.Random, Seed: e.Seed}
	for _, p := range e.Params {
		sp, err := sweep.ParseParam(p)
		if err != nil {
			return nil, &UsageError{Msg: err.Error()}
		}
		s.Params = append(s.Params, sp)
	}
	if err := sweep.Validate(s.Params, s.Random); err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	s.Trials = sweep.Trials(*s)
	if err := checkRunID("--name ", s.Trials[len(s.Trials)-1].ID); err != nil {
		return nil, err
	}
	return s, nil
}
