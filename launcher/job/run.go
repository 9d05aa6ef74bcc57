package job

import (
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// run is a run's state across its attempts: what the attempt closure of
// commands.Run once captured, as fields.
type run struct {
	spec  Spec
	hooks Hooks
	req   schedule.Request
	// lo is the engine's options as the attempts change them: priority,
	// --sync's report, and after a lost host what the relaunch carries.
	lo    launcher.Options
	mk    Planner
	check *doctor.Options
	// checked are --check's results by host: each host is checked once,
	// however often the run plans again.
	checked map[string]doctor.Host
	// used are the ports every plan of this run gave, by host: a plan
	// made again without a lost host keeps off them. A host that was only
	// cut off may still run its old attempt until its supervisor gives up
	// (for a detached run, --unattended); on other ports, that attempt
	// cannot reach, or be reached by, the new one.
	used map[string][]int
	// tickets hold the run's place in the queue while it waits (see "Fair
	// sharing"); their hosts say on wake when their locks change, which
	// ends the pause between probes at once.
	tickets *hostops.Tickets
	// parking is closed once the tickets parkTickets holds in the
	// background are held, as parked (joinParking).
	parking chan struct{}
	parked  *hostops.Tickets
	wake    chan struct{}
	// lastInv is the last probe's, whose tickets give the run's place in
	// the queue.
	lastInv inventory.Inventory
	// held is how many GPU claims each run (schedule.EndingKey) held on
	// each host at the last probe while this run waited; ending the runs
	// seen holding fewer on a host since (noteEnding).
	held   map[string]map[string]int
	ending map[string]bool
	// unlabelled are the GPUs each host answered with claimed by no run's
	// label at the last probe; settling those newly so at this one.
	unlabelled map[string][]int
	settling   map[string][]int
	// started: an attempt reached its start (once it has, its id's claims
	// may be its own); claimed: Hooks.Claim was called.
	started, claimed bool
}

func newRun(s Spec, h Hooks) *run {
	r := &run{spec: s, hooks: h, req: s.Request, lo: s.Engine, mk: h.Plan,
		checked: map[string]doctor.Host{}, used: map[string][]int{}, wake: make(chan struct{}, 1)}
	if r.mk == nil {
		r.mk = schedule.Make
	}
	r.mk = r.endingPlanner(r.mk)
	if s.Check != nil {
		c := *s.Check
		r.check = &c
	}
	// The run's place among waiting runs: when it began to wait.
	r.req.QueueSince = time.Now()
	return r
}

// close gives up the tickets.
func (r *run) close() {
	r.joinParking()
	r.tickets.Release()
}

func (r *run) waited() {
	if r.hooks.Waited != nil {
		r.hooks.Waited()
	}
}
