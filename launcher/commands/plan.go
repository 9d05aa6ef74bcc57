package commands

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// PlanOptions are `tfhive plan`'s.
type PlanOptions struct {
	Streams
	Hosts HostOptions
	Job   Job
	JSON  bool
	Emit  EmitOptions // --emit: print the job for a cluster manager instead
}

// Plan probes the hosts and prints where every task would run, starting
// nothing.
func Plan(ctx context.Context, o PlanOptions) error {
	if handled, err := emitJob(o); handled {
		return err
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	// It shows the hosts: it says which look alike (clones).
	fleet.SayClones()
	tree, err := o.Job.prepareSync("", o.Stderr)
	if err != nil {
		return err
	}
	req, err := o.Job.request(fleet.Hosts, "plan", tree)
	if err != nil {
		return err
	}
	defer fleet.Close()
	if tree != nil {
		fleet.LookForCode(tree.Hash)
	}
	// As status and run do: a plan made on ./hosts.yaml's fleet is
	// another than one made on the user's.
	noteHostsFrom(o.Hosts, o.Stderr)
	plan, _, err := job.ProbeAndPlan(ctx, job.FleetOf(fleet), req, o.Stderr, nil, schedule.Make)
	if err != nil {
		return err
	}
	if o.JSON {
		return view.WritePlanJSON(o.Stdout, plan)
	}
	return view.WritePlan(o.Stdout, plan)
}

// request builds and validates the job request before any host is
// touched; verb is the command, for the hint; tree is the --sync tree,
// if any.
func (j Job) request(hosts []inventory.Host, verb string, tree *codesync.Tree) (schedule.Request, error) {
	avail, err := j.availability(hosts)
	if err != nil {
		return schedule.Request{}, err
	}
	lo, hi, err := schedule.ParsePortRange(j.PortRange)
	if err != nil {
		return schedule.Request{}, err
	}
	req := schedule.Request{
		Availability:  avail,
		Framework:     j.Framework,
		PS:            j.PS,
		Workers:       j.Workers,
		Chief:         j.Chief,
		Evaluator:     j.Evaluator,
		GPUsPerWorker: j.GPUsPerWorker,
		GPUsPerPS:     j.GPUsPerPS,
		Strategy:      j.Strategy,
		RanksPerHost:  j.RanksPerHost,
		PortLo:        lo,
		PortHi:        hi,
		Command:       j.Command,
		TFFlags:       j.TFFlags,
		NIC:           j.NIC,
		Priority:      j.Priority,
		RunID:         j.Name,
		Code:          codeOf(tree),
	}
	if req.RunID == "" {
		req.RunID = newRunID(time.Now())
	}
	if len(req.Command) == 0 {
		return req, &UsageError{Msg: "no command given", Fix: "put the training command after --, e.g. tfhive " + verb + " --workers 2 -- python train.py"}
	}
	return req, req.Validate()
}

// newRunID is time-based, sorts by start time and does not collide between
// two runs started in the same second.
func newRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%x", now.Format("20060102-150405"), b)
}
