package top

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// nineteen is fleet() with 19 GPUs: its four hosts (12 GPUs and one
// unreachable: 13 rows) and gpu05 (four) and gpu06 (three), each GPU
// claimed by a user of its own host: 20 rows.
func nineteen() Snapshot {
	snap := fleet()
	n := func(v int) *int { return &v }
	for h := 5; h <= 6; h++ {
		host := inventory.HostInventory{Name: fmt.Sprintf("gpu%02d", h)}
		var st []schedule.GPUStatus
		for i := range 4 {
			if h == 6 && i == 3 {
				break
			}
			host.GPUs = append(host.GPUs, inventory.GPU{Index: i, MemoryUsedMiB: n(4), MemoryTotalMiB: n(40960), UtilizationPct: n(0)})
			host.Claims = append(host.Claims, inventory.Claim{Kind: "gpu", ID: i, RunID: fmt.Sprintf("r%d%d", h, i), User: fmt.Sprintf("user%d", h), Task: "worker:0"})
			st = append(st, schedule.GPUStatus{Index: i, State: schedule.Claimed})
		}
		snap.Inv.Hosts = append(snap.Inv.Hosts, host)
		snap.Status = append(snap.Status, st)
	}
	return snap
}

// gpuRows are the GPU lines of a screen: host, index.
func gpuRows(screen string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && strings.HasPrefix(f[0], "gpu") {
			out = append(out, f[0]+" "+f[1])
		}
	}
	return out
}

// At 80×24 with 19 GPUs (and the queue and seven runs beside) every GPU
// row is reached: ↓ a row at a time shows a new row each press, the
// header saying which; PgDn a page, End the last, Home the first, PgUp
// back; past the end stays at the end.
func TestScrollReachesEveryGPU(t *testing.T) {
	h := newHarness(t, nineteen())
	seen := map[string]bool{}
	s := h.screen()
	checkScreen(t, s)
	first := gpuRows(s)
	page := len(first)
	if page >= 20 || !strings.Contains(s, fmt.Sprintf("rows 1–%d of 20", page)) {
		t.Fatalf("the first screen shows %d GPU rows:\n%s", page, s)
	}
	for _, r := range first {
		seen[r] = true
	}
	for i := 1; i <= 20-page; i++ {
		h.key("down")
		s = h.screen()
		checkScreen(t, s)
		rows := gpuRows(s)
		if len(rows) != page || seen[rows[len(rows)-1]] {
			t.Fatalf("down %d showed no new row (%v):\n%s", i, rows, s)
		}
		seen[rows[len(rows)-1]] = true
	}
	if len(seen) != 20 || !strings.Contains(s, "gpu06") || !strings.Contains(s, fmt.Sprintf("rows %d–20 of 20", 21-page)) {
		t.Fatalf("%d rows seen; the last screen:\n%s", len(seen), s)
	}
	h.key("down") // past the end: stays
	if got := gpuRows(h.screen()); got[len(got)-1] != "gpu06 2" {
		t.Errorf("past the end shows %v", got)
	}
	h.key("up") // and one back at once
	if got := gpuRows(h.screen()); got[len(got)-1] == "gpu06 2" {
		t.Errorf("up after the end did not move: %v", got)
	}
	h.key("home")
	if got := gpuRows(h.screen()); got[0] != first[0] {
		t.Errorf("home shows %v", got)
	}
	h.key("pgdown")
	if !strings.Contains(h.screen(), fmt.Sprintf("rows %d–%d of 20", page+1, 2*page)) {
		t.Errorf("pgdown did not show the next page:\n%s", h.screen())
	}
	h.key("pgup")
	if !strings.Contains(h.screen(), fmt.Sprintf("rows 1–%d of 20", page)) {
		t.Errorf("pgup did not go back a page:\n%s", h.screen())
	}
	h.key("end")
	if !strings.Contains(h.screen(), "gpu06             2") {
		t.Errorf("end does not show the last GPU:\n%s", h.screen())
	}
	// The runs' selection did not move meanwhile.
	if h.m.sel != "lr-0.1" {
		t.Errorf("scrolling moved the selection to %q", h.m.sel)
	}
}

// The wheel scrolls the GPU list under the pointer and moves the
// selection over the user's runs; the view asks the terminal for it.
func TestWheel(t *testing.T) {
	h := newHarness(t, nineteen())
	if h.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Error("the view does not ask for the mouse")
	}
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown, Y: 3})
	if !strings.Contains(h.screen(), "rows 4–") {
		t.Errorf("a notch down did not scroll 3 rows:\n%s", h.screen())
	}
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp, Y: 3})
	if !strings.Contains(h.screen(), "rows 1–") {
		t.Errorf("a notch up did not scroll back:\n%s", h.screen())
	}
	// The last line of the body is one of the user's runs.
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown, Y: 22})
	if h.m.sel != "lr-0.01" || !strings.Contains(h.screen(), "rows 1–") {
		t.Errorf("the wheel over the runs selected %q:\n%s", h.m.sel, h.screen())
	}
}

// tab gives ↑↓ to the runs and back; the footer says which.
func TestFocus(t *testing.T) {
	h := newHarness(t, nineteen())
	if !strings.Contains(h.screen(), "↑↓ PgDn scroll  tab runs") {
		t.Errorf("footer:\n%s", h.screen())
	}
	h.key("tab")
	h.key("down")
	if h.m.sel != "lr-0.01" || !strings.Contains(h.screen(), "rows 1–") || !strings.Contains(h.screen(), "↑↓ select run  tab GPUs") {
		t.Errorf("down over the runs selected %q:\n%s", h.m.sel, h.screen())
	}
	h.key("end")
	if h.m.sel != "old-4" {
		t.Errorf("end over the runs selected %q", h.m.sel)
	}
	h.key("tab")
	h.key("down")
	if h.m.sel != "old-4" || !strings.Contains(h.screen(), "rows 2–") {
		t.Errorf("down back on the GPUs:\n%s", h.screen())
	}
}

// / types a filter, applied as typed, by host or by user, over the GPU
// list and the queue; enter keeps it, esc clears it; nothing matching is
// said; the filter cannot drive the terminal.
func TestFilter(t *testing.T) {
	h := newHarness(t, nineteen())
	h.key("down")
	h.key("/")
	for _, k := range "GPU05" {
		h.key(string(k))
	}
	s := h.screen()
	checkScreen(t, s)
	if got := gpuRows(s); len(got) != 4 || got[0] != "gpu05 0" || !strings.Contains(s, "filter: GPU05") {
		t.Errorf("by host: %v\n%s", got, s)
	}
	if strings.Contains(s, "erin") {
		t.Errorf("the queue is not filtered:\n%s", s)
	}
	if !strings.Contains(s, "> lr-0.1") {
		t.Errorf("the runs were filtered:\n%s", s)
	}
	for range 5 {
		h.key("backspace")
	}
	for _, k := range "erin" {
		h.key(string(k))
	}
	h.key("enter")
	s = h.screen()
	if got := gpuRows(s); len(got) != 1 || got[0] != "gpu02 2" || !strings.Contains(s, "q1   erin") || strings.Contains(s, "alice  normal") {
		t.Errorf("by user: %v\n%s", got, s)
	}
	if h.m.mode != modeMain || !strings.Contains(s, "filter erin (esc clears)") {
		t.Errorf("enter did not keep the filter:\n%s", s)
	}
	h.key("/")
	h.key("z")
	if s := h.screen(); len(gpuRows(s)) != 0 || !strings.Contains(s, "no row matches the filter") {
		t.Errorf("nothing matching:\n%s", s)
	}
	h.key("\x1b")
	h.key("esc")
	if s := h.screen(); h.m.filter != "" || !strings.Contains(s, "rows 1–") || strings.Contains(s, "esc clears") {
		t.Errorf("esc did not clear the filter (%q):\n%s", h.m.filter, s)
	}
}

// A refresh with fewer GPUs, or a taller screen, keeps the offset within
// the rows: one ↑ then shows one row more above.
func TestScrollClampedOnRefresh(t *testing.T) {
	h := newHarness(t, nineteen())
	h.key("end")
	snap := nineteen()
	snap.Inv.Hosts, snap.Status = snap.Inv.Hosts[:5], snap.Status[:5] // 17 rows
	h.send(snapMsg(snap))
	end := h.m.gpuOff
	if end != h.m.maxOff() {
		t.Fatalf("offset %d past the last window %d", end, h.m.maxOff())
	}
	h.key("up")
	if h.m.gpuOff != end-1 {
		t.Errorf("up from the end: offset %d, want %d", h.m.gpuOff, end-1)
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 60})
	if h.m.gpuOff != 0 || strings.Contains(h.screen(), "rows ") {
		t.Errorf("a tall screen: offset %d\n%s", h.m.gpuOff, h.screen())
	}
}
