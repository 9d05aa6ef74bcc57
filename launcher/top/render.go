package top

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// Layout rules:
//   - One line per thing, columns padded to their widest cell (some
//     capped, so that one long run id does not push the rest off), and
//     every line cut to the terminal's width with an ellipsis: a line is
//     never wrapped, so the screen's rows are the model's.
//   - Each section is a header line and its rows. When they do not all
//     fit the height, the longest section gives up rows first, its last
//     line saying how many are hidden ("… 5 more"); the selected run
//     stays in view.
//   - What comes from hosts, tasks and files (names, commands, run ids,
//     metrics, log lines) is sanitised: it cannot drive the terminal.

// Caps on columns whose cells can be long.
const (
	capHost  = 16
	capRun   = 28
	capUser  = 12
	capState = 11
)

// ellipsis ends a cut line or cell.
const ellipsis = "…"

// selMark starts the selected run's line.
const selMark = "> "

// section is a header line and its rows; sel is the row to keep in view
// (-1: none).
type section struct {
	header string
	rows   []string
	sel    int
	// keys are the rows' text for the filter (filter.go); nil: the
	// section is not filtered. matched of of: what a filter left.
	keys        []string
	matched, of int
	// scrolls: the section is a window moved from off (scroll.go), not
	// kept around sel; picks: its rows are selected (the user's runs).
	scrolls bool
	off     int
	picks   bool
}

// Plain renders snap as text for a reader that is not a terminal: every
// section whole, no width, no colour, no keys.
func Plain(snap *Snapshot, from string) string {
	var b strings.Builder
	b.WriteString(headline(snap, from, 0) + "\n")
	for _, s := range sections(snap, false, "", snap.At) {
		b.WriteString(strings.TrimRight(s.header, " ") + "\n")
		for _, r := range s.rows {
			b.WriteString(strings.TrimRight(r, " ") + "\n")
		}
	}
	return b.String()
}

// headline is the screen's first line: the fleet in numbers, when, and
// where the hosts come from.
func headline(snap *Snapshot, from string, every time.Duration) string {
	total, free := snap.gpuCount()
	bad := 0
	for _, h := range snap.Inv.Hosts {
		if h.Err != nil {
			bad++
		}
	}
	parts := []string{"tfhive top"}
	if !snap.At.IsZero() {
		parts = append(parts, snap.At.Local().Format("15:04:05"))
	}
	hosts := wording.Count(len(snap.Inv.Hosts), "host")
	if bad > 0 {
		hosts += fmt.Sprintf(", %d down", bad)
	}
	parts = append(parts, hosts, fmt.Sprintf("%s, %d free", wording.Count(total, "GPU"), free), fmt.Sprintf("%d queued", len(snap.Queue)))
	if every > 0 {
		parts = append(parts, "every "+every.String())
	}
	if from != "" {
		parts = append(parts, from)
	}
	return strings.Join(parts, "  ")
}

// sections are the GPUs, the queue and the user's runs; sel is the
// selected run's id.
func sections(snap *Snapshot, color bool, sel string, now time.Time) []section {
	return []section{gpuSection(snap, color), queueSection(snap), runSection(snap, sel, now)}
}

func gpuSection(snap *Snapshot, color bool) section {
	var rows [][]string
	day := anyReservation(snap)
	for i, h := range snap.Inv.Hosts {
		hostRow := func(state, detail string) {
			rows = append(rows, []string{h.Name, "-", "-", "-", state, detail})
		}
		switch {
		case h.Err != nil:
			hostRow("unreachable", h.Err.Message)
			continue
		case h.DriverError != "":
			hostRow("driver-error", h.DriverError)
			continue
		case h.NoNvidiaSMI || len(h.GPUs) == 0:
			hostRow("no-gpus", "")
			continue
		}
		for j, g := range h.GPUs {
			st := schedule.GPUStatus{State: "?"}
			if i < len(snap.Status) && j < len(snap.Status[i]) {
				st = snap.Status[i][j]
			}
			rows = append(rows, []string{h.Name, view.GPUIndex(g), util(g), memory(g), string(st.State), holder(&h, g, st)})
			if day {
				rows[len(rows)-1] = slices.Insert(rows[len(rows)-1], 5, dayLine(&h, g))
			}
		}
	}
	paint := map[int]func(string) string{}
	if color {
		paint[4] = view.PaintState
	}
	header, caps := []string{"HOST", "GPU", "UTIL", "MEMORY", "STATE", "HELD BY"}, []int{capHost, 0, 0, 0, capState, 0}
	if day {
		// The next 24 h, an hour a cell (reservations.go).
		header, caps = slices.Insert(header, 5, "RESERVED 24H"), slices.Insert(caps, 5, 0)
		for i := range rows {
			if len(rows[i]) == 6 {
				rows[i] = slices.Insert(rows[i], 5, "")
			}
		}
	}
	head, lines := table(header, caps, rows, paint)
	return section{header: head, rows: lines, sel: -1, keys: rowKeys(rows), scrolls: true}
}

// holder says who holds a GPU: the run and task of its claim, the
// processes on it, or why it is not free.
func holder(h *inventory.HostInventory, g inventory.GPU, st schedule.GPUStatus) string {
	switch st.State {
	case schedule.Claimed:
		for _, c := range h.Claims {
			if c.Kind == "gpu" && c.ID == g.Index && c.Blocked == "" {
				if c.RunID == "" {
					return "a holder with no tfhive label"
				}
				return strings.Join(nonEmpty(c.RunID, c.User, c.Task), " ")
			}
		}
	case schedule.Busy:
		if len(g.Processes) > 0 {
			var ps []string
			for _, p := range g.Processes {
				user := p.User
				if user == "" {
					user = "?"
				}
				ps = append(ps, fmt.Sprintf("%s:%d %s", user, p.PID, view.Truncate(p.Command, 30)))
			}
			return strings.Join(ps, ", ")
		}
	}
	return st.Reason
}

func util(g inventory.GPU) string {
	if g.UtilizationPct == nil {
		return "N/A"
	}
	return strconv.Itoa(*g.UtilizationPct) + "%"
}

// memory is used/total in GiB, to stay narrow: "10.7/24.0G".
func memory(g inventory.GPU) string {
	gib := func(p *int) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatFloat(float64(*p)/1024, 'f', 1, 64)
	}
	return gib(g.MemoryUsedMiB) + "/" + gib(g.MemoryTotalMiB) + "G"
}

func queueSection(snap *Snapshot) section {
	var rows [][]string
	for i, e := range snap.Queue {
		n := 0
		for _, g := range e.Shape {
			n += g
		}
		prio := e.Priority
		if prio == "" {
			prio = "normal"
		}
		why := e.Why
		if why == "" {
			why = "next to start"
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), e.RunID, e.User, prio, strconv.Itoa(n), why})
	}
	head, lines := table([]string{"QUEUE", "RUN", "USER", "PRIORITY", "GPUS", "WHY"},
		[]int{0, capRun, capUser, 0, 0, 0}, rows, nil)
	if len(rows) == 0 {
		head = "QUEUE  no run waits for GPUs"
	}
	return section{header: head, rows: lines, sel: -1, keys: rowKeys(rows)}
}

func runSection(snap *Snapshot, sel string, now time.Time) section {
	var rows [][]string
	s := section{sel: -1, picks: true}
	for i, r := range snap.Mine {
		if r.ID == sel {
			s.sel = i
		}
		gpus, hosts := "-", "-"
		if r.Live {
			gpus, hosts = strconv.Itoa(r.GPUs), strings.Join(r.Hosts, ",")
		}
		age := "-"
		if !r.Since.IsZero() {
			age = ago(now.Sub(r.Since))
		}
		metric := r.Metric
		if metric == "" {
			metric = "-"
		}
		state := r.State
		if r.Requeued > 0 {
			state += ", " + view.Resumed(r.Requeued)
		}
		if r.Idle != "" {
			state += ", " + r.Idle
		}
		rows = append(rows, []string{r.ID, state, age, gpus, metric, hosts})
	}
	s.header, s.rows = table([]string{"YOUR RUNS", "STATE", "AGE", "GPUS", "METRIC", "HOSTS"},
		[]int{capRun, capState, 0, 0, 32, 0}, rows, nil)
	if len(rows) == 0 {
		s.header = "YOUR RUNS  none here (tfhive-runs/) or on the hosts"
	}
	// The selected run is marked, for the eye and for the screen without
	// colour.
	s.header = "  " + s.header
	for i := range s.rows {
		mark := "  "
		if i == s.sel {
			mark = selMark
		}
		s.rows[i] = mark + s.rows[i]
	}
	return s
}

// ago is a duration as top shows it: 45s, 12m, 3h05m, 2d.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// table pads the header and rows into lines, two spaces between columns;
// caps[i] > 0 cuts column i's cells to that width; paint[i], when set,
// colours column i's cells after padding (widths are the plain text's).
// The last column is not padded. Every cell is sanitised.
func table(header []string, caps []int, rows [][]string, paint map[int]func(string) string) (string, []string) {
	widths := make([]int, len(header))
	clean := make([][]string, len(rows))
	for i, h := range header {
		widths[i] = ansi.StringWidth(h)
	}
	for r, row := range rows {
		clean[r] = make([]string, len(row))
		for i, c := range row {
			c = view.SanitizeCell(c)
			if caps[i] > 0 && ansi.StringWidth(c) > caps[i] {
				c = ansi.Truncate(c, caps[i], ellipsis)
			}
			clean[r][i] = c
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	line := func(cells []string, paint map[int]func(string) string) string {
		var b strings.Builder
		for i, c := range cells {
			last := i == len(cells)-1
			pad := ""
			if !last {
				pad = strings.Repeat(" ", widths[i]-ansi.StringWidth(c)+2)
			}
			if f := paint[i]; f != nil {
				c = f(c)
			}
			b.WriteString(c + pad)
		}
		return strings.TrimRight(b.String(), " ")
	}
	lines := make([]string, len(clean))
	for r, row := range clean {
		lines[r] = line(row, paint)
	}
	return line(header, nil), lines
}

// fit lays the sections into height lines (all of them when height is
// 0), the longest giving up rows first (layout).
func fit(ss []section, height int) []string {
	alloc := layout(ss, height)
	var out []string
	for i, s := range ss {
		if s.scrolls || len(s.rows) == 0 {
			head, rows := scrolled(s, alloc[i]-1)
			out = append(out, head)
			out = append(out, rows...)
			continue
		}
		out = append(out, s.header)
		out = append(out, window(s, alloc[i]-1)...)
	}
	if height > 0 && len(out) > height {
		out = out[:height]
	}
	return out
}

// window is n lines of s's rows: all of them if they fit, else n-1 rows
// around the selected one and a line saying how many are hidden.
func window(s section, n int) []string {
	if n >= len(s.rows) {
		return s.rows
	}
	if n <= 0 {
		return nil
	}
	k := n - 1
	off := 0
	if s.sel >= k {
		off = s.sel - k + 1
	}
	out := append([]string{}, s.rows[off:off+k]...)
	return append(out, fmt.Sprintf("  … %d more", len(s.rows)-k))
}

// cut makes line exactly width columns wide (cut with an ellipsis, or
// padded), so that the screen is redrawn whole; 0: as it is.
func cut(line string, width int) string {
	if width <= 0 {
		return line
	}
	if w := ansi.StringWidth(line); w > width {
		return ansi.Truncate(line, width, ellipsis)
	} else if w < width {
		return line + strings.Repeat(" ", width-w)
	}
	return line
}
