package view

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// `tfhive ps`: the runs holding GPUs, one row per run and host (hostops
// reads them from the hosts' claims).

// RunOnHost is what one run holds on one host, from the claims there. It
// is ps's row and its --json document's, so it lives with the table;
// hostops.Runs fills it from the inventory, and hostops.Kill stops what
// its Holders name.
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
	// says of a kept run (hostops.RunStarting, …; keeper attached or not); empty
	// and nil when there is nothing to say: another user's run, one
	// started with --reconnect 0, or a task whose files are not there yet.
	State  string `json:"state,omitempty"`
	Keeper *bool  `json:"keeper,omitempty"`
	// Idle says how long the run's GPUs here have been idle, once its
	// host warned ("idle 37m"); "" when not.
	Idle string `json:"idle,omitempty"`
	// Requeued is how often the run went back to the queue, preempted or
	// asking to (its holders' label says so): "resumed (attempt 2)" after
	// its state. 0: never.
	Requeued int `json:"requeued,omitempty"`
	// GPUUse is the live utilisation of the run's GPUs here, in GPUs'
	// order, matched by the UUID each claim names; nil when the host
	// could not say (no nvidia-smi, a claims-only probe).
	GPUUse []inventory.GPUUse `json:"gpu_usage,omitempty"`
	// Holders are the processes holding the run's claims on the host, as
	// /proc/locks names them: kill finds the tasks' supervisors from them.
	Holders []int `json:"-"`
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
		if r.Requeued > 0 {
			state += ", " + Resumed(r.Requeued)
		}
		if r.Idle != "" {
			state += ", " + r.Idle
		}
		if r.Keeper != nil {
			keeper = map[bool]string{true: "yes", false: "no"}[*r.Keeper]
		}
		rows[i] = []string{id, user, r.Host, state, keeper, strings.Join(r.Tasks, ","), IntList(r.GPUs), liveCell(r.GPUUse), IntList(r.Ports),
			r.Since.Local().Format("2006-01-02 15:04:05") + " (" + now.Sub(r.Since).Round(time.Second).String() + " ago)"}
	}
	return WriteTable(w, []string{"RUN", "USER", "HOST", "STATE", "KEEPER", "TASKS", "GPUS", "GPU UTIL / MEM", "PORTS", "SINCE"}, rows)
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

// RunsChanged says whether `tfhive ps --watch` off a terminal prints the
// runs again: a run came or went, or one's state, keeper, tasks, GPUs or
// ports changed. The GPUs' live utilisation alone is no change (it moves
// at every refresh), nor is the time since.
func RunsChanged(was, now []RunOnHost) bool {
	return !slices.EqualFunc(was, now, func(a, b RunOnHost) bool {
		return a.RunID == b.RunID && a.User == b.User && a.Host == b.Host && a.State == b.State && a.Idle == b.Idle && a.Requeued == b.Requeued &&
			(a.Keeper == nil) == (b.Keeper == nil) && (a.Keeper == nil || *a.Keeper == *b.Keeper) &&
			slices.Equal(a.Tasks, b.Tasks) && slices.Equal(a.GPUs, b.GPUs) && slices.Equal(a.Ports, b.Ports) && a.Since.Equal(b.Since)
	})
}

// Resumed is a requeued run's note in ps and top: it started again after
// going back to the queue, its start numbered from 1 ("attempt 2").
func Resumed(requeued int) string {
	return fmt.Sprintf("resumed (attempt %d)", requeued+1)
}
