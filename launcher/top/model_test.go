package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
	"github.com/tfhive/tfhive/schedule"
)

var t0 = time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)

// fleet is a snapshot of three hosts: one unreachable, two of four GPUs
// each, free, busy with another user's process (whose command line tries
// to drive the terminal), claimed by the user's runs and by another's,
// an intruder; two runs queued; seven runs of the user.
func fleet() Snapshot {
	n := func(v int) *int { return &v }
	gpu := func(i, used, util int, procs ...inventory.Process) inventory.GPU {
		return inventory.GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA A100-SXM4-40GB",
			MemoryUsedMiB: n(used), MemoryTotalMiB: n(40960), UtilizationPct: n(util), Processes: procs}
	}
	claim := func(i int, run, user, task string) inventory.Claim {
		return inventory.Claim{Kind: "gpu", ID: i, RunID: run, User: user, Task: task, Since: t0.Add(-time.Hour)}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{
		{Name: "gpu01", GPUs: []inventory.GPU{
			gpu(0, 4, 0), gpu(1, 30000, 97, inventory.Process{PID: 4242, User: "bob", Command: "python evil.py \x1b]52;c;Zm9v\x07"}),
			gpu(2, 20000, 88), gpu(3, 20000, 91),
		}, Claims: []inventory.Claim{claim(2, "lr-0.1", "alice", "worker:0"), claim(3, "lr-0.1", "alice", "worker:1")}},
		{Name: "gpu02", GPUs: []inventory.GPU{
			gpu(0, 10000, 50), gpu(1, 10000, 60, inventory.Process{PID: 77, User: "carol", Command: "python mine.py", Intruder: true}),
			gpu(2, 4, 0), gpu(3, 4, 0),
		}, Claims: []inventory.Claim{claim(0, "big-run", "dave", "worker:0"), claim(1, "big-run", "dave", "worker:1")}},
		{Name: "gpu03", Err: &inventory.HostError{Kind: inventory.ErrTimeout, Message: "connect timed out after 10s"}},
		{Name: "gpu04-with-a-name-longer-than-its-column", GPUs: []inventory.GPU{gpu(0, 4, 0), gpu(1, 4, 0), gpu(2, 4, 0), gpu(3, 4, 0)}},
	}}
	st := [][]schedule.GPUStatus{
		{{Index: 0, State: schedule.Free}, {Index: 1, State: schedule.Busy, Reason: "97% utilised"},
			{Index: 2, State: schedule.Claimed}, {Index: 3, State: schedule.Claimed}},
		{{Index: 0, State: schedule.Claimed}, {Index: 1, State: schedule.Intruder, Reason: "carol:77 python mine.py on run big-run's GPU"},
			{Index: 2, State: schedule.Queued, Reason: "kept for run q1 (erin)"}, {Index: 3, State: schedule.Free}},
		nil,
		{{Index: 0, State: schedule.Free}, {Index: 1, State: schedule.Free}, {Index: 2, State: schedule.Free}, {Index: 3, State: schedule.Free}},
	}
	q := []schedule.QueueEntry{
		{Ticket: inventory.Ticket{RunID: "q1", User: "erin", Priority: "high", Shape: []int{1, 1, 1}, Since: t0.Add(-5 * time.Minute)}, Why: "3 GPUs, 2 free"},
		{Ticket: inventory.Ticket{RunID: "q2", User: "alice", Shape: []int{4}, Since: t0.Add(-2 * time.Minute)}, Why: "behind q1"},
	}
	mine := []Run{
		{ID: "lr-0.1", State: "running", Hosts: []string{"gpu01"}, GPUs: 2, Since: t0.Add(-time.Hour), Metric: "loss=0.25", LogDir: "tfhive-runs/lr-0.1", Live: true},
		{ID: "lr-0.01", State: "running", Since: t0.Add(-3 * time.Minute), LogDir: "tfhive-runs/lr-0.01"},
	}
	for i := range 5 {
		mine = append(mine, Run{ID: fmt.Sprintf("old-%d", i), State: "succeeded", Since: t0.Add(-time.Duration(i+2) * time.Hour),
			Metric: "loss=0.1" + strings.Repeat("9", i), LogDir: "tfhive-runs/old"})
	}
	return Snapshot{At: t0, Inv: inv, Status: st, Queue: q, Mine: mine}
}

// harness drives a model as Bubble Tea would: messages in, commands run
// (Ticks skipped: the test sends its ticks itself).
type harness struct {
	t       *testing.T
	m       Model
	stopped []string
	tails   int
}

func newHarness(t *testing.T, snap Snapshot) *harness {
	h := &harness{t: t}
	h.m = noWait(New(Config{
		Refresh:  func(context.Context) Snapshot { return snap },
		Interval: 2 * time.Second,
		Stop: func(_ context.Context, id string) (string, error) {
			h.stopped = append(h.stopped, id)
			return "stopped run " + id + " on gpu01 (2 tasks)", nil
		},
		Tail: func(r Run, file, lines int) LogTail {
			h.tails++
			return LogTail{Files: []string{"console.log", "worker-0.log"}, File: file,
				Lines: []string{fmt.Sprintf("[worker:0 gpu01] step %d of %s", file, r.ID), "\x1b[2Jcleared?"}}
		},
		Now: func() time.Time { return t0 },
	}))
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.run(h.m.Init())
	return h
}

// send delivers msg and runs what it returns.
func (h *harness) send(msg tea.Msg) tea.Cmd {
	m, cmd := h.m.Update(msg)
	h.m = m.(Model)
	return cmd
}

// run runs cmd and delivers its message, unless it is a tick (a timer)
// or a quit; it returns that message.
func (h *harness) run(cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	switch msg.(type) {
	case tickMsg, logTickMsg, tea.QuitMsg, nil:
		return msg // a timer's, delivered by the test itself; the end
	}
	return h.run(h.send(msg))
}

// noWait makes m's timers fire at once.
func noWait(m Model) Model {
	m.after = func(_ time.Duration, msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }
	return m
}

func (h *harness) key(s string) tea.Msg {
	var k tea.KeyPressMsg
	switch s {
	case "enter":
		k = tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		k = tea.KeyPressMsg{Code: tea.KeyEscape}
	case "ctrl+c":
		k = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "tab":
		k = tea.KeyPressMsg{Code: tea.KeyTab}
	case "down":
		k = tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		k = tea.KeyPressMsg{Code: tea.KeyUp}
	case "pgdown":
		k = tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		k = tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "home":
		k = tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		k = tea.KeyPressMsg{Code: tea.KeyEnd}
	case "backspace":
		k = tea.KeyPressMsg{Code: tea.KeyBackspace}
	default:
		k = tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
	}
	return h.run(h.send(k))
}

func (h *harness) screen() string { return h.m.View().Content }

// checkScreen: exactly 24 lines of exactly 80 columns, nothing that
// drives the terminal but colour.
func checkScreen(t *testing.T, screen string) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	if len(lines) != 24 {
		t.Errorf("%d lines, want 24:\n%s", len(lines), screen)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w != 80 {
			t.Errorf("line %d is %d columns, want 80: %q", i+1, w, l)
		}
		plain := ansi.Strip(l)
		if strings.ContainsAny(plain, "\x1b\x07\r\t") {
			t.Errorf("line %d holds a control byte: %q", i+1, l)
		}
	}
}

// The screen at 80×24: the headline, every section shrunk to fit with
// what is hidden said, every line cut to 80 columns, another user's
// command line made inert.
func TestView80x24(t *testing.T) {
	h := newHarness(t, fleet())
	screen := h.screen()
	checkScreen(t, screen)
	testkit.Golden(t, "testdata/top-80x24.txt", []byte(screen+"\n"))
	for _, want := range []string{"4 hosts, 1 down", "gpu03", "unreachable", "lr-0.1 alice worker:0",
		"bob:4242 python evil.py", "q1", "erin", "> lr-0.1", "loss=0.25", "rows 1–10 of 13"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
}

// A tall terminal shows everything; a tiny one still gets its size.
func TestViewSizes(t *testing.T) {
	h := newHarness(t, fleet())
	h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	screen := h.screen()
	if strings.Contains(screen, "more") || !strings.Contains(screen, "old-4") {
		t.Errorf("at 120×40 everything fits:\n%s", screen)
	}
	h.send(tea.WindowSizeMsg{Width: 20, Height: 5})
	lines := strings.Split(h.screen(), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines at height 5", len(lines))
	}
	for _, l := range lines {
		if ansi.StringWidth(l) != 20 {
			t.Errorf("%q is not 20 columns", l)
		}
	}
}

// Moving down selects the next run and keeps it in view; the selection
// survives a refresh and follows its run, not its row.
func TestSelect(t *testing.T) {
	snap := fleet()
	h := newHarness(t, snap)
	h.key("tab") // from the GPU list to the runs
	for range 6 {
		h.key("j")
	}
	if h.m.sel != "old-4" {
		t.Fatalf("selected %q after 6 downs, want old-4", h.m.sel)
	}
	if s := h.screen(); !strings.Contains(s, "> old-4") {
		t.Errorf("the selected run is not in view:\n%s", s)
	}
	h.key("j") // past the last: stays
	h.key("k")
	if h.m.sel != "old-3" {
		t.Errorf("selected %q, want old-3", h.m.sel)
	}
	// A refresh where old-3 moved up keeps it selected.
	snap.Mine = snap.Mine[2:]
	h.send(snapMsg(snap))
	if h.m.sel != "old-3" {
		t.Errorf("after a refresh, selected %q, want old-3", h.m.sel)
	}
	// Gone: the first is selected.
	snap.Mine = snap.Mine[:1]
	h.send(snapMsg(snap))
	if h.m.sel != "old-0" {
		t.Errorf("after old-3 went, selected %q, want old-0", h.m.sel)
	}
}

// x asks first; n leaves the run alone, y stops it through Stop, and the
// footer says what Stop said. A run holding nothing is not offered.
func TestStop(t *testing.T) {
	h := newHarness(t, fleet())
	h.key("x")
	if s := h.screen(); !strings.Contains(s, "stop run lr-0.1 on gpu01? y/n") {
		t.Fatalf("no confirmation:\n%s", s)
	}
	h.key("n")
	if len(h.stopped) != 0 || !strings.Contains(h.screen(), "left running") {
		t.Fatalf("n stopped %v", h.stopped)
	}
	h.key("K")
	h.key("y")
	if len(h.stopped) != 1 || h.stopped[0] != "lr-0.1" {
		t.Fatalf("y stopped %v, want [lr-0.1]", h.stopped)
	}
	if s := h.screen(); !strings.Contains(s, "stopped run lr-0.1 on gpu01") {
		t.Errorf("the footer does not say what stop did:\n%s", s)
	}
	h.key("tab")
	h.key("j") // lr-0.01 holds nothing on the hosts
	h.key("x")
	if h.m.mode != modeMain || !strings.Contains(h.screen(), "nothing to stop") {
		t.Errorf("a run holding nothing was offered to stop:\n%s", h.screen())
	}
}

// A failing stop is said, not fatal.
func TestStopFails(t *testing.T) {
	h := newHarness(t, fleet())
	h.m.cfg.Stop = func(context.Context, string) (string, error) { return "", errors.New("gpu01: connection lost") }
	h.key("x")
	h.key("y")
	if s := h.screen(); !strings.Contains(s, "stop lr-0.1: gpu01: connection lost") {
		t.Errorf("the error is not said:\n%s", s)
	}
}

// enter opens the log pane on the selected run's first file, tab the
// next; the lines are made inert; esc goes back.
func TestLogPane(t *testing.T) {
	h := newHarness(t, fleet())
	h.key("enter")
	s := h.screen()
	checkScreen(t, s)
	for _, want := range []string{"log of run lr-0.1: console.log (1 of 2)", "step 0 of lr-0.1", "^[[2Jcleared?"} {
		if !strings.Contains(s, want) {
			t.Errorf("log pane lacks %q:\n%s", want, s)
		}
	}
	h.key("tab")
	if s := h.screen(); !strings.Contains(s, "worker-0.log (2 of 2)") || !strings.Contains(s, "step 1 of") {
		t.Errorf("tab did not show the next file:\n%s", s)
	}
	// The pane polls its file while open; a poll of a pane since closed
	// reads nothing.
	before := h.tails
	h.run(h.send(logTickMsg(h.m.logGen)))
	if h.tails != before+1 {
		t.Errorf("a poll read %d times", h.tails-before)
	}
	gen := h.m.logGen
	h.key("esc")
	if h.m.mode != modeMain {
		t.Fatal("esc did not leave the log pane")
	}
	before = h.tails
	h.run(h.send(logTickMsg(gen)))
	if h.tails != before {
		t.Error("a closed pane's poll read its file")
	}
	// A run with no log dir here says where its output is.
	snap := fleet()
	snap.Mine[0].LogDir = ""
	h.send(snapMsg(snap))
	h.key("l")
	if h.m.mode != modeMain || !strings.Contains(h.screen(), "tfhive logs -H") {
		t.Errorf("a run without a log dir here:\n%s", h.screen())
	}
}

// q and Ctrl-C quit; in the log pane q only goes back, Ctrl-C quits.
func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		h := newHarness(t, fleet())
		if _, ok := h.key(k).(tea.QuitMsg); !ok {
			t.Errorf("%s did not quit", k)
		}
	}
	h := newHarness(t, fleet())
	h.key("enter")
	if _, ok := h.key("q").(tea.QuitMsg); ok || h.m.mode != modeMain {
		t.Error("q in the log pane did not go back")
	}
	h.key("enter")
	if _, ok := h.key("ctrl+c").(tea.QuitMsg); !ok {
		t.Error("Ctrl-C in the log pane did not quit")
	}
}

// A refresh is scheduled after each snapshot; a tick of an earlier one
// (r pressed in between) starts none, nor does one while a refresh is
// under way.
func TestRefreshTicks(t *testing.T) {
	var calls int
	snap := fleet()
	m := noWait(New(Config{Refresh: func(context.Context) Snapshot { calls++; return snap }, Interval: time.Second}))
	step := func(msg tea.Msg) tea.Cmd {
		mm, cmd := m.Update(msg)
		m = mm.(Model)
		return cmd
	}
	step(m.Init()())
	if calls != 1 {
		t.Fatalf("%d refreshes", calls)
	}
	old := m.gen
	cmd := step(tea.KeyPressMsg{Code: 'r', Text: "r"})
	if cmd == nil || !m.refreshing {
		t.Fatal("r did not refresh")
	}
	if step(tickMsg(old)) != nil {
		t.Error("a tick while refreshing started another refresh")
	}
	step(cmd())
	if calls != 2 {
		t.Fatalf("%d refreshes", calls)
	}
	if step(tickMsg(old)) != nil {
		t.Error("a stale tick started a refresh")
	}
	if c := step(tickMsg(m.gen)); c == nil {
		t.Error("the current tick started no refresh")
	} else {
		step(c())
	}
	if calls != 3 {
		t.Errorf("%d refreshes, want 3", calls)
	}
	// A failed refresh keeps the last snapshot and says why.
	step(snapMsg(Snapshot{At: t0, Err: errors.New("gpu01: policy: bad")}))
	if !m.have || len(m.snap.Mine) == 0 || !strings.Contains(m.Screen(), "refresh: gpu01: policy: bad") {
		t.Errorf("a failed refresh:\n%s", m.Screen())
	}
}

// The help lists the keys; any key goes back.
func TestHelp(t *testing.T) {
	h := newHarness(t, fleet())
	h.key("?")
	s := h.screen()
	checkScreen(t, s)
	for _, want := range []string{"q, Ctrl-C", "enter, l", "x, K"} {
		if !strings.Contains(s, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	h.key("z")
	if h.m.mode != modeMain {
		t.Error("a key did not leave the help")
	}
}

// Without a terminal: every row, no colour, no cut.
func TestPlain(t *testing.T) {
	snap := fleet()
	out := Plain(&snap, "hosts from ./hosts.yaml")
	testkit.Golden(t, "testdata/plain.txt", []byte(out))
	if strings.Contains(out, "more") || !strings.Contains(out, "old-4") || strings.Contains(out, "\x1b") ||
		!strings.Contains(out, "bob:4242 python evil.py ^[]52;c;Zm9v^G") {
		t.Errorf("plain output:\n%s", out)
	}
}

// Colour: the states, and the selected run in reverse video; the
// columns as wide as without.
func TestColor(t *testing.T) {
	h := newHarness(t, fleet())
	plain := h.screen()
	h.m.cfg.Color = true
	colored := h.screen()
	if !strings.Contains(colored, "\x1b[7m> lr-0.1") || !strings.Contains(colored, "\x1b[32mfree") {
		t.Errorf("no colour:\n%q", colored)
	}
	if ansi.Strip(colored) != plain {
		t.Error("colour changed the text")
	}
}
