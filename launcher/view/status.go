package view

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// Host-level states shown in the STATE column when a host has no GPU rows.
const (
	stateUnreachable = "unreachable"
	stateDriverError = "driver-error"
	stateNoGPUs      = "no-gpus"
)

// statusStateCol is the STATE column of the status table.
const statusStateCol = 5

// WriteStatusTable prints one row per GPU, and one row per host that has
// none to show, with the reason, each one line (width.go). st is
// schedule.Classify's answer for inv.
// color colours the STATE column (stateColors; UseColor decides).
func WriteStatusTable(w io.Writer, inv inventory.Inventory, st [][]schedule.GPUStatus, color bool) error {
	var rows [][]string
	for i, h := range inv.Hosts {
		hostRow := func(state, detail string) {
			rows = append(rows, []string{h.Name, "-", "-", "-", "-", state, detail})
		}
		switch {
		case h.Err != nil:
			hostRow(stateUnreachable, h.Err.Message)
			continue
		case h.DriverError != "":
			hostRow(stateDriverError, h.DriverError)
			continue
		case h.NoNvidiaSMI:
			hostRow(stateNoGPUs, "no nvidia-smi (CPU only)")
			continue
		case len(h.GPUs) == 0:
			hostRow(stateNoGPUs, "nvidia-smi found no devices")
			continue
		}
		for j, g := range h.GPUs {
			s := st[i][j]
			rows = append(rows, []string{h.Name, strconv.Itoa(g.Index), GPUName(g), memory(g), util(g), string(s.State), withReservation(&h, g, withIdle(&h, g, detail(g, s)))})
		}
	}
	var sgr func(row, col int) string
	if color {
		sgr = func(row, col int) string {
			if col != statusStateCol {
				return ""
			}
			return stateColors[rows[row][col]]
		}
	}
	// A host's reason (a driver's message, a dial error: as long as they
	// come) is on its row like a GPU's processes: one line per GPU or
	// host, which scripts grep; cut to a terminal's width, whole into a
	// pipe or a file (width.go), whole in --json.
	return writeTable(w, statusHeader, rows, sgr)
}

var statusHeader = []string{"HOST", "GPU", "NAME", "MEMORY", "UTIL", "STATE", "DETAIL"}

// GPUName is a GPU's model, or for a MIG instance its profile and the
// GPU it is a slice of: "MIG 1g.10gb of GPU 0".
func GPUName(g inventory.GPU) string {
	m := g.MIGInstance
	if m == nil {
		return g.Name
	}
	if m.Profile == "" {
		return fmt.Sprintf("MIG device %d of GPU %d", m.Device, m.Parent)
	}
	return fmt.Sprintf("MIG %s of GPU %d", m.Profile, m.Parent)
}

// GPUIndex is a GPU's index, or for a MIG instance its index and the
// GPU it is a slice of, "2 (MIG of 0)", where no column names it.
func GPUIndex(g inventory.GPU) string {
	if g.MIGInstance == nil {
		return strconv.Itoa(g.Index)
	}
	return fmt.Sprintf("%d (MIG of %d)", g.Index, g.MIGInstance.Parent)
}

func memory(g inventory.GPU) string {
	return fmt.Sprintf("%s/%s MiB", intOr(g.MemoryUsedMiB, "?"), intOr(g.MemoryTotalMiB, "?"))
}

func util(g inventory.GPU) string {
	if g.UtilizationPct == nil {
		return "N/A"
	}
	return strconv.Itoa(*g.UtilizationPct) + "%"
}

// detail lists the GPU's processes as user:pid command (what a person needs
// to go and ask someone), after the reason when the GPU is excluded
// whatever runs on it.
func detail(g inventory.GPU, s schedule.GPUStatus) string {
	if len(g.Processes) == 0 {
		return s.Reason
	}
	procs := processes(g)
	if s.State == schedule.Intruder {
		return s.Reason // the intruders and the run whose GPU it is
	}
	if s.State == schedule.Excluded {
		return s.Reason + "; " + procs
	}
	return procs
}

func processes(g inventory.GPU) string {
	parts := make([]string, len(g.Processes))
	for i, p := range g.Processes {
		user := p.User
		if user == "" {
			user = "?"
		}
		parts[i] = fmt.Sprintf("%s:%d %s", user, p.PID, Truncate(p.Command, 40))
	}
	return strings.Join(parts, ", ")
}

// Truncate cuts s to n runes, the last an ellipsis, so that a long
// command line keeps its column readable.
func Truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func intOr(p *int, alt string) string {
	if p == nil {
		return alt
	}
	return strconv.Itoa(*p)
}

// StatusDocument is the `tfhive status --json` document: the probe's
// inventory with each GPU's state as the scheduler sees it.
type StatusDocument struct {
	Hosts []StatusHost `json:"hosts"`
}

// StatusHost is one host of the status document.
type StatusHost struct {
	inventory.HostInventory
	Reachable bool        `json:"reachable"`
	GPUs      []StatusGPU `json:"gpus"`
}

// StatusGPU is a GPU with its state ("free", "busy", "excluded") and why.
type StatusGPU struct {
	inventory.GPU
	State  schedule.GPUState `json:"state"`
	Reason string            `json:"reason,omitempty"`
	// Idle: a claimed GPU's "idle 37m" (the user's own run's; idleNote).
	Idle string `json:"idle,omitempty"`
}

// WriteStatusJSON prints the status document, indented, newline-terminated.
func WriteStatusJSON(w io.Writer, inv inventory.Inventory, st [][]schedule.GPUStatus) error {
	doc := StatusDocument{Hosts: make([]StatusHost, len(inv.Hosts))}
	for i, h := range inv.Hosts {
		sh := StatusHost{HostInventory: h, Reachable: h.Err == nil, GPUs: make([]StatusGPU, len(h.GPUs))}
		for j, g := range h.GPUs {
			sh.GPUs[j] = StatusGPU{GPU: g, State: st[i][j].State, Reason: st[i][j].Reason, Idle: idleNote(&h, g)}
		}
		doc.Hosts[i] = sh
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
