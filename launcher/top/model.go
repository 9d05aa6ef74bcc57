package top

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tfhive/tfhive/launcher/view"
)

// Config is what the model is given: the functions that reach the hosts
// and files, and how it looks.
type Config struct {
	// Refresh gathers a snapshot; it is called again Interval after the
	// last one came back (never two at once).
	Refresh  func(context.Context) Snapshot
	Interval time.Duration
	// Stop stops the user's run id (tfhive kill's path) and says what it
	// did, in a line.
	Stop func(ctx context.Context, id string) (string, error)
	// Tail reads the last lines of one of run's log files: the file'th
	// of its files, which it lists.
	Tail func(run Run, file, lines int) LogTail
	// Ctx ends what Refresh, Stop and Tail do once the model quits.
	Ctx   context.Context
	Color bool
	// From says where the hosts come from ("" for the command line).
	From string
	// Now is the clock for runs' ages; nil: time.Now.
	Now func() time.Time
}

// LogTail is the end of a run's log file.
type LogTail struct {
	Files []string // the run's log files, by name
	File  int      // which of them
	Lines []string
	Err   error
}

// logPoll is how often the log pane reads its file again.
const logPoll = 500 * time.Millisecond

type mode int

const (
	modeMain mode = iota
	modeHelp
	modeLog
	modeConfirm
	modeFilter // the filter being typed, after /
)

// Model is top's Bubble Tea model.
type Model struct {
	cfg           Config
	snap          Snapshot
	have          bool // a snapshot came
	width, height int
	sel           string // the selected run's id
	mode          mode
	confirm       Run    // the run to stop, in modeConfirm
	note          string // the last thing said (a stop, an error)
	refreshing    bool
	gen           int // the refresh tick that counts
	logRun        Run
	log           LogTail
	logGen        int
	focus         focus  // what ↑↓ move: the GPU list or the user's runs
	gpuOff        int    // the GPU list's first row shown (scroll.go)
	filter        string // what the GPU list and the queue show (filter.go)
	// after is msg after d: tea.Tick, which tests replace with no wait.
	after func(d time.Duration, msg tea.Msg) tea.Cmd
}

// New is the model before its first snapshot.
func New(cfg Config) Model {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Ctx == nil {
		cfg.Ctx = context.Background()
	}
	after := func(d time.Duration, msg tea.Msg) tea.Cmd {
		return tea.Tick(d, func(time.Time) tea.Msg { return msg })
	}
	return Model{cfg: cfg, refreshing: true, after: after}
}

// Messages.
type (
	snapMsg Snapshot
	tickMsg int // a refresh generation
	stopMsg struct {
		id, said string
		err      error
	}
	logMsg struct {
		gen int
		LogTail
	}
	logTickMsg int
)

// Init starts the first refresh.
func (m Model) Init() tea.Cmd { return m.refresh() }

func (m Model) refresh() tea.Cmd {
	return func() tea.Msg { return snapMsg(m.cfg.Refresh(m.cfg.Ctx)) }
}

// Update handles a message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.gpuOff = min(m.gpuOff, m.maxOff()) // a taller screen shows more from the top
		return m, nil
	case snapMsg:
		m.refreshing = false
		m.gen++
		if msg.Err != nil {
			m.note = "refresh: " + msg.Err.Error()
			if !m.have {
				m.snap.At = msg.At
			}
		} else {
			m.snap, m.have = Snapshot(msg), true
			m.keepSelection()
			m.gpuOff = min(m.gpuOff, m.maxOff()) // fewer rows: the last window

		}
		if msg.Warning != "" {
			m.note = msg.Warning
		}
		return m, m.after(m.cfg.Interval, tickMsg(m.gen))
	case tickMsg:
		if int(msg) != m.gen || m.refreshing {
			return m, nil // a tick of an earlier refresh
		}
		m.refreshing = true
		return m, m.refresh()
	case stopMsg:
		if msg.err != nil {
			m.note = "stop " + msg.id + ": " + msg.err.Error()
		} else {
			m.note = msg.said
		}
		return m, m.refreshNow()
	case logMsg:
		if m.mode != modeLog || msg.gen != m.logGen {
			return m, nil
		}
		m.log = msg.LogTail
		return m, m.after(logPoll, logTickMsg(m.logGen))
	case logTickMsg:
		if m.mode != modeLog || int(msg) != m.logGen {
			return m, nil
		}
		return m, m.tail()
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.MouseWheelMsg:
		return m.wheel(msg)
	}
	return m, nil
}

// refreshNow refreshes at once unless a refresh is under way.
func (m *Model) refreshNow() tea.Cmd {
	if m.refreshing {
		return nil
	}
	m.refreshing = true
	return m.refresh()
}

// keepSelection keeps the selected run selected across refreshes, or
// selects the first when it is gone.
func (m *Model) keepSelection() {
	for _, r := range m.snap.Mine {
		if r.ID == m.sel {
			return
		}
	}
	m.sel = ""
	if len(m.snap.Mine) > 0 {
		m.sel = m.snap.Mine[0].ID
	}
}

func (m Model) selected() (Run, bool) {
	for _, r := range m.snap.Mine {
		if r.ID == m.sel {
			return r, true
		}
	}
	return Run{}, false
}

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if k.String() == "ctrl+c" {
		return m, tea.Quit
	}
	switch m.mode {
	case modeConfirm:
		m.mode = modeMain
		if k.String() == "y" || k.String() == "Y" {
			r := m.confirm
			m.note = "stopping run " + r.ID + " …"
			return m, func() tea.Msg {
				said, err := m.cfg.Stop(m.cfg.Ctx, r.ID)
				return stopMsg{id: r.ID, said: said, err: err}
			}
		}
		m.note = "run " + m.confirm.ID + " left running"
		return m, nil
	case modeHelp:
		m.mode = modeMain
		return m, nil
	case modeFilter:
		return m.filterKey(k)
	case modeLog:
		switch k.String() {
		case "esc", "q", "h", "left", "backspace":
			m.mode = modeMain
			m.logGen++
		case "tab", "right", "n":
			if len(m.log.Files) > 1 {
				m.log.File = (m.log.File + 1) % len(m.log.Files)
				m.logGen++
				return m, m.tail()
			}
		}
		return m, nil
	}
	if m.navKey(k.String()) {
		return m, nil
	}
	switch k.String() {
	case "q":
		return m, tea.Quit
	case "?":
		m.mode = modeHelp
	case "r":
		return m, m.refreshNow()
	case "tab", "shift+tab":
		m.focus = 1 - m.focus
	case "/":
		m.mode = modeFilter
	case "esc":
		m.filter, m.gpuOff = "", 0
	case "enter", "l", "right":
		r, ok := m.selected()
		if !ok {
			m.note = "no run selected"
			return m, nil
		}
		if r.LogDir == "" {
			m.note = "run " + r.ID + " has no log dir here: tfhive logs -H HOSTS " + r.ID + " reads the hosts'"
			return m, nil
		}
		m.mode, m.logRun, m.log = modeLog, r, LogTail{}
		m.logGen++
		return m, m.tail()
	case "x", "K":
		r, ok := m.selected()
		switch {
		case !ok:
			m.note = "no run selected"
		case !r.Live:
			m.note = "run " + r.ID + " holds nothing on the hosts: nothing to stop"
		default:
			m.mode, m.confirm = modeConfirm, r
		}
	}
	return m, nil
}

func (m *Model) move(d int) {
	rs := m.snap.Mine
	if len(rs) == 0 {
		return
	}
	i := 0
	for j, r := range rs {
		if r.ID == m.sel {
			i = j
		}
	}
	i = min(max(i+d, 0), len(rs)-1)
	m.sel = rs[i].ID
}

func (m Model) tail() tea.Cmd {
	r, file, gen, lines := m.logRun, m.log.File, m.logGen, max(m.height-2, 1)
	return func() tea.Msg { return logMsg{gen: gen, LogTail: m.cfg.Tail(r, file, lines)} }
}

// View is the screen, on the terminal's alternate screen, with the
// mouse's wheel reported (cell motion: clicks and the wheel, no motion
// without a button; a terminal's shift-drag still selects text).
func (m Model) View() tea.View {
	v := tea.NewView(m.Screen())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	return v
}

// shown are the sections as the screen lays them out: filtered, the GPU
// list at its offset.
func (m Model) shown() []section {
	ss := sections(&m.snap, m.cfg.Color, m.sel, m.cfg.Now())
	for i := range ss {
		ss[i] = filtered(ss[i], m.filter)
		if ss[i].scrolls {
			ss[i].off = m.gpuOff
		}
	}
	return ss
}

// Screen draws the screen: exactly height lines of exactly width columns
// once the terminal's size is known.
func (m Model) Screen() string {
	var lines []string
	body := max(m.height-2, 0) // the headline and the footer
	if m.height == 0 {
		body = 0 // size unknown yet: everything, uncut
	}
	switch m.mode {
	case modeHelp:
		lines = append([]string{"tfhive top: keys"}, helpLines...)
	case modeLog:
		lines = m.logView(body)
	default:
		lines = []string{headline(&m.snap, m.cfg.From, m.cfg.Interval)}
		if !m.have {
			lines = append(lines, "probing the hosts …")
		} else {
			lines = append(lines, fit(m.shown(), body)...)
		}
	}
	if m.height > 0 {
		for len(lines) < m.height-1 {
			lines = append(lines, "")
		}
		lines = lines[:m.height-1]
	}
	lines = append(lines, m.footer())
	for i, l := range lines {
		l = cut(l, m.width)
		if m.cfg.Color && strings.HasPrefix(l, selMark) && m.mode != modeLog {
			l = "\x1b[7m" + l + "\x1b[0m"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

var helpLines = []string{
	"",
	"  q, Ctrl-C     quit",
	"  ↑ ↓, k j      scroll the GPU list a row, or select one of your runs",
	"  PgUp PgDn     a page of it (Home, End: its top, its end); the wheel too",
	"  tab           move ↑↓ between the GPU list and your runs",
	"  /             filter the GPUs and the queue by host or user (any text",
	"                of a row); enter keeps it, esc clears it",
	"  enter, l      follow its log (tab: the next file; esc, q: back)",
	"  x, K          stop it (asks y/n first; only your own runs)",
	"  r             refresh now",
	"  ?             this help (any key: back)",
	"",
	"  GPUs: every host's, with who holds each (a run's claim, another",
	"  user's processes, an intruder). QUEUE: the runs waiting for GPUs, in",
	"  the order they will start. YOUR RUNS: those of tfhive-runs/ here and",
	"  those holding GPUs on the hosts as you, with the latest captured metric.",
}

func (m Model) footer() string {
	switch m.mode {
	case modeConfirm:
		return fmt.Sprintf("stop run %s on %s? y/n", view.SanitizeCell(m.confirm.ID), strings.Join(m.confirm.Hosts, ","))
	case modeLog:
		return "tab next file  esc back  q back  Ctrl-C quit"
	case modeHelp:
		return "any key: back"
	case modeFilter:
		return "filter: " + view.SanitizeCell(m.filter) + "█  enter keep  esc clear"
	}
	keys := "q quit  ↑↓ PgDn scroll  tab runs  / filter  enter log  x stop  ? help"
	if m.focus == focusRuns {
		keys = "q quit  ↑↓ select run  tab GPUs  / filter  enter log  x stop  ? help"
	}
	if m.filter != "" {
		keys = "filter " + view.SanitizeCell(m.filter) + " (esc clears)  |  " + keys
	}
	if m.note != "" {
		return view.SanitizeCell(m.note) + "  |  " + keys
	}
	return keys
}

func (m Model) logView(body int) []string {
	name := "…"
	if m.log.File < len(m.log.Files) {
		name = m.log.Files[m.log.File]
	}
	head := fmt.Sprintf("log of run %s: %s (%d of %d)", m.logRun.ID, name, m.log.File+1, max(len(m.log.Files), 1))
	lines := []string{view.SanitizeCell(head)}
	if m.log.Err != nil {
		return append(lines, view.SanitizeCell(m.log.Err.Error()))
	}
	tail := m.log.Lines
	if body > 0 && len(tail) > body {
		tail = tail[len(tail)-body:]
	}
	for _, l := range tail {
		lines = append(lines, view.SanitizeCell(strings.ReplaceAll(l, "\t", "    ")))
	}
	return lines
}
