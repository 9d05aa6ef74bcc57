package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// RunOnHost is what one run holds on one host, from the claims there.
type RunOnHost struct {
	// RunID is "" for claims whose holder is not a tfhive task or cannot
	// be seen (hidden processes): label unknown.
	RunID string    `json:"run_id"`
	User  string    `json:"user"`
	Host  string    `json:"host"`
	Tasks []string  `json:"tasks"`
	GPUs  []int     `json:"gpus"`
	Ports []int     `json:"ports"`
	Since time.Time `json:"since"`
	// State and Keeper are what the user's own run directory on the host
	// says of a kept run (RunStarting, …; keeper attached or not); empty
	// and nil when there is nothing to say: another user's run, one
	// started with --reconnect 0, or a task whose files are not there yet.
	State  string `json:"state,omitempty"`
	Keeper *bool  `json:"keeper,omitempty"`
	// GPUUse is the live utilisation of the run's GPUs here, in GPUs'
	// order, matched by the UUID each claim names; nil when the host
	// could not say (no nvidia-smi, a claims-only probe).
	GPUUse []inventory.GPUUse `json:"gpu_usage,omitempty"`
	uid    int
	uuids  map[int]string // GPU index → the UUID its claim names
	// Holders are the processes holding the run's claims on the host, as
	// /proc/locks names them: kill finds the tasks' supervisors from them.
	Holders []int `json:"-"`
}

// Runs groups the fleet's claims by run, user and host, oldest run first.
// A run id is only a label its holder chose: the same id held by another
// user is another row, never part of the first user's run.
func Runs(inv inventory.Inventory) []RunOnHost {
	var out []RunOnHost
	ended := endedRuns(inv)
	for _, h := range inv.Hosts {
		byRun := map[[2]string]*RunOnHost{}
		var order [][2]string
		for _, c := range h.Claims {
			if c.Blocked != "" {
				continue
			}
			key := [2]string{c.RunID, c.User}
			r := byRun[key]
			if r == nil {
				r = &RunOnHost{RunID: c.RunID, User: c.User, Host: h.Name, Since: c.Since, Tasks: []string{}, GPUs: []int{}, Ports: []int{}, uid: c.UID, uuids: map[int]string{}}
				byRun[key] = r
				order = append(order, key)
			}
			if c.Since.Before(r.Since) {
				r.Since = c.Since
			}
			if c.Task != "" && !slices.Contains(r.Tasks, c.Task) {
				r.Tasks = append(r.Tasks, c.Task)
			}
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
			r.GPUUse = liveUse(r.GPUs, r.uuids, h.GPUUse)
			out = append(out, *r)
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
func keptState(r RunOnHost, kept *inventory.KeptRuns, ended map[string]bool) (string, *bool) {
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

// WriteRuns prints `tfhive ps`: one row per run and host.
func WriteRuns(w io.Writer, runs []RunOnHost, now time.Time) error {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		id, user := r.RunID, r.User
		if id == "" {
			id = "?" // held, but not by a tfhive task this user can see
		}
		if user == "" {
			user = "?"
		}
		state, keeper := r.State, "-"
		if state == "" {
			state = "-"
		}
		if r.Keeper != nil {
			keeper = map[bool]string{true: "yes", false: "no"}[*r.Keeper]
		}
		rows[i] = []string{id, user, r.Host, state, keeper, strings.Join(r.Tasks, ","), intList(r.GPUs), liveCell(r.GPUUse), intList(r.Ports),
			r.Since.Local().Format("2006-01-02 15:04:05") + " (" + now.Sub(r.Since).Round(time.Second).String() + " ago)"}
	}
	return writeTable(w, []string{"RUN", "USER", "HOST", "STATE", "KEEPER", "TASKS", "GPUS", "GPU UTIL / MEM", "PORTS", "SINCE"}, rows)
}

// liveCell shows each GPU's utilisation and memory used, in GPUS' order:
// "97% 10.2G, 3% 0.5G"; "-" when the host could not say.
func liveCell(use []inventory.GPUUse) string {
	if len(use) == 0 {
		return "-"
	}
	parts := make([]string, len(use))
	for i, u := range use {
		parts[i] = fmt.Sprintf("%.0f%% %.1fG", u.Util, u.MemMiB/1024)
	}
	return strings.Join(parts, ", ")
}

// WriteRunsJSON prints `tfhive ps --json`: {"runs": [...]}.
func WriteRunsJSON(w io.Writer, runs []RunOnHost) error {
	if runs == nil {
		runs = []RunOnHost{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"runs": runs})
}

// KillResult is what `tfhive kill` did on one host.
type KillResult struct {
	Host  string
	Tasks int // supervisors stopped
	Err   error
}

// Kill stops a run's tasks on every host where it holds claims. It
// signals only what the kernel says belongs to the run: the supervisors
// whose parents are the run's claim holders (from /proc/locks) and whose
// own command line carries the run's label. Each supervisor then stops its
// task's process group, which only it knows: SIGTERM, and after grace a
// second SIGTERM, on which it kills the group. A signal the host refuses
// is reported as refused, never as stopped.
func Kill(ctx context.Context, runs []RunOnHost, execs map[string]remote.Executor, grace time.Duration, parallel int) []KillResult {
	results := make([]KillResult, len(runs))
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	for i, r := range runs {
		g.Go(func() error {
			results[i] = KillResult{Host: r.Host}
			ex := execs[r.Host]
			switch {
			case ex == nil:
				results[i].Err = fmt.Errorf("no connection")
				return nil
			case len(r.Holders) == 0 || !claim.ValidRunID(r.RunID):
				results[i].Err = fmt.Errorf("its tasks are still starting; try again in a moment")
				return nil
			}
			var out, errb strings.Builder
			rc, err := ex.Run(ctx, "sh -s", strings.NewReader(killScript(r.RunID, r.Holders, grace)), &out, &errb)
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(lastLine(out.String()), "stopped ")))
			results[i].Tasks = n
			switch {
			case err != nil:
				results[i].Err = err
			case rc == 3:
				results[i].Err = fmt.Errorf("its tasks are still starting or already gone; try again in a moment")
			case rc != 0:
				results[i].Err = fmt.Errorf("%s", strings.TrimSpace(strings.TrimPrefix(errb.String(), "tfhive: ")))
			}
			return nil
		})
	}
	g.Wait()
	return results
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// killScript stops a run's supervisors on one host: the holders'
// children whose own command line carries the run's label
// (scripts/kill.sh).
func killScript(runID string, holders []int, grace time.Duration) string {
	return killSh.With(
		shscript.Set("run", runID),
		shscript.Set("holders", intList(holders)),
		shscript.Set("tenths", strconv.Itoa(int(grace/(100*time.Millisecond)))),
	)
}

var killSh = shscript.Load(scripts, "scripts/kill.sh")
