package hostops

import (
	"slices"
	"sort"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
)

// `tfhive ps`: the runs holding GPUs, from the claims the probe read on
// each host and the user's own run directories there (view shows them).

// Runs groups the fleet's claims by run, user and host, oldest run first.
// A run id is only a label its holder chose: the same id held by another
// user is another row, never part of the first user's run.
func Runs(inv inventory.Inventory) []view.RunOnHost {
	var out []view.RunOnHost
	ended := endedRuns(inv)
	for _, h := range inv.Hosts {
		byRun := map[[2]string]*heldRun{}
		var order [][2]string
		for _, c := range h.Claims {
			if c.Blocked != "" {
				continue
			}
			key := [2]string{c.RunID, c.User}
			r := byRun[key]
			if r == nil {
				r = &heldRun{RunOnHost: view.RunOnHost{RunID: c.RunID, User: c.User, Host: h.Name, Since: c.Since, Tasks: []string{}, GPUs: []int{}, Ports: []int{}}, uid: c.UID, uuids: map[int]string{}}
				byRun[key] = r
				order = append(order, key)
			}
			if c.Since.Before(r.Since) {
				r.Since = c.Since
			}
			if c.Task != "" && !slices.Contains(r.Tasks, c.Task) {
				r.Tasks = append(r.Tasks, c.Task)
			}
			r.Requeued = max(r.Requeued, c.Requeued)
			if c.PID > 0 && !slices.Contains(r.Holders, c.PID) {
				r.Holders = append(r.Holders, c.PID)
			}
			switch {
			case c.Kind == "gpu" && !slices.Contains(r.GPUs, c.ID):
				r.GPUs = append(r.GPUs, c.ID)
				r.uuids[c.ID] = c.UUID
			case c.Kind == "port" && !slices.Contains(r.Ports, c.ID):
				r.Ports = append(r.Ports, c.ID)
			}
		}
		for _, key := range order {
			r := byRun[key]
			r.State, r.Keeper = keptState(*r, h.Kept, ended)
			r.Idle = keptIdle(*r, h.Kept)
			r.GPUUse = liveUse(r.GPUs, r.uuids, h.GPUUse)
			out = append(out, r.RunOnHost)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].RunID < out[j].RunID
	})
	return out
}

// heldRun is a row while Runs builds it: with what only the grouping
// needs, which the row (view's, shown and encoded as it is) leaves out.
type heldRun struct {
	view.RunOnHost
	uid   int
	uuids map[int]string // GPU index → the UUID its claim names
}

// liveUse picks a run's GPUs' rows out of its host's live utilisation,
// by the UUID the claim names: an index may be renumbered, a UUID never.
func liveUse(gpus []int, uuids map[int]string, use []inventory.GPUUse) []inventory.GPUUse {
	var out []inventory.GPUUse
	for _, g := range gpus {
		for _, u := range use {
			if u.UUID != "" && u.UUID == uuids[g] {
				out = append(out, u)
				break
			}
		}
	}
	if len(out) != len(gpus) {
		return nil // a GPU unaccounted for: no figure rather than a partial one
	}
	return out
}

// A kept run's states in `tfhive ps`, from its host's run directory.
const (
	// RunStarting: the run holds its claims here, and some of its tasks
	// here have not started (tfhive starts them once every task of the
	// run holds its claims).
	RunStarting = "starting"
	// RunRunning: every task here started, a keeper follows each one that
	// still runs, and no task of the run has ended on any host probed.
	RunRunning = "running"
	// RunFinishing: as running, but some task of the run has ended (here
	// or on another host probed): the keeper is ending the run.
	RunFinishing = "finishing"
	// RunUnattended: every task here started, and one that still runs has
	// no keeper: nobody follows it, or nobody was heard from within the
	// keepalive window (a keeper killed, asleep, cut off).
	RunUnattended = "unattended"
)

// endedRuns are the runs some task of which ended, by what the hosts'
// run directories say.
func endedRuns(inv inventory.Inventory) map[string]bool {
	ended := map[string]bool{}
	for _, h := range inv.Hosts {
		if h.Kept == nil {
			continue
		}
		for _, t := range h.Kept.Tasks {
			if t.Ended {
				ended[t.RunID] = true
			}
		}
	}
	return ended
}

// keptState is a run's state on one host and whether a keeper follows
// its tasks there, from the user's own run directory (kept). Only a row
// whose claims the same user holds is described: a run id is a label
// anyone may choose. A task is followed when a session's feeder holds its
// lock on the task's control FIFO and a control line reached it within
// the keepalive window: a keeper killed loses the first at once (its
// sessions close), one stopped or cut off the second once the window has
// passed.
func keptState(r heldRun, kept *inventory.KeptRuns, ended map[string]bool) (string, *bool) {
	if r.RunID == "" || kept == nil || r.uid != kept.UID {
		return "", nil
	}
	tasks := map[string]inventory.KeptTask{}
	for _, t := range kept.Tasks {
		if t.RunID == r.RunID {
			tasks[t.Task] = t
		}
	}
	if len(tasks) == 0 {
		return "", nil
	}
	followed, running := true, 0
	for _, id := range r.Tasks {
		t, ok := tasks[id]
		if !ok || !t.Started {
			return RunStarting, nil
		}
		if t.Ended {
			continue
		}
		running++
		followed = followed && t.Followed && t.Fresh
	}
	switch {
	case running == 0: // each task here has ended: its supervisor is going
		return RunFinishing, nil
	case !followed:
		return RunUnattended, &followed
	case ended[r.RunID]:
		return RunFinishing, &followed
	}
	return RunRunning, &followed
}

// keptIdle is how long the run's GPUs on this host have been idle, once
// the host warned about them (idle-watch.sh's NAME.idle), "idle 37m":
// when every task of the run here that has not ended is idle, for the
// shortest of their stretches; "" otherwise. As keptState, only for the
// user's own run.
func keptIdle(r heldRun, kept *inventory.KeptRuns) string {
	d, ok := kept.IdleFor(r.uid, r.RunID, r.Tasks)
	if !ok {
		return ""
	}
	return "idle " + view.ShortDuration(d)
}
