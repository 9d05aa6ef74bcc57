package top

import (
	"fmt"

	tea "charm.land/bubbletea/v2"
)

// Scrolling, as htop's list scrolls: the GPU list is a window of the
// height left to it, moved by ↑↓ (a row), PgUp/PgDn (a window), Home/End
// and the mouse wheel, its header saying which rows show ("rows 4–12 of
// 19"); no row is given up to say so, so each step shows a new one. The
// user's runs keep their selected run in view instead, as before. Tab
// moves the keys between the two; the wheel moves the one under the
// pointer.

type focus int

const (
	focusGPUs focus = iota
	focusRuns
)

// wheelStep is how many rows a notch of the wheel scrolls, as a pager's.
const wheelStep = 3

// layout is how many lines each section gets of height (all of them when
// height is 0): the longest gives up rows first; a section keeps its
// header and one line.
func layout(ss []section, height int) []int {
	alloc := make([]int, len(ss))
	total := 0
	for i, s := range ss {
		alloc[i] = 1 + len(s.rows)
		if len(s.rows) == 0 {
			alloc[i] += s.emptyLines()
		}
		total += alloc[i]
	}
	for height > 0 && total > height {
		big := -1
		for i := range alloc {
			if alloc[i] > 2 && (big < 0 || alloc[i] > alloc[big]) {
				big = i
			}
		}
		if big < 0 {
			break
		}
		alloc[big]--
		total--
	}
	return alloc
}

// emptyLines is what a section with no rows shows under its header: one
// line when a filter hid them all (saying so), else none.
func (s section) emptyLines() int {
	if s.of > 0 && s.matched == 0 {
		return 1
	}
	return 0
}

// scrolled is n lines of a scrolling section's rows from its offset
// (clamped so the last window is full), and its header saying which rows
// show when not all do.
func scrolled(s section, n int) (string, []string) {
	if len(s.rows) == 0 {
		if s.emptyLines() > 0 && n > 0 {
			return s.header, []string{"  no row matches the filter (esc clears it)"}
		}
		return s.header, nil
	}
	if n >= len(s.rows) {
		return s.header, s.rows
	}
	if n <= 0 {
		return s.header, nil
	}
	off := min(max(s.off, 0), len(s.rows)-n)
	head := s.header + fmt.Sprintf("  rows %d–%d of %d", off+1, off+n, len(s.rows))
	return head, s.rows[off : off+n]
}

// maxOff is the largest useful offset of the GPU list on this screen.
func (m Model) maxOff() int {
	ss := m.shown()
	alloc := layout(ss, m.body())
	for i, s := range ss {
		if s.scrolls {
			return max(len(s.rows)-(alloc[i]-1), 0)
		}
	}
	return 0
}

// scroll moves the GPU list by d rows, within its rows.
func (m *Model) scroll(d int) {
	m.gpuOff = min(max(m.gpuOff+d, 0), m.maxOff())
}

// page is the GPU list's window, the step of PgUp/PgDn.
func (m Model) page() int {
	ss := m.shown()
	alloc := layout(ss, m.body())
	for i, s := range ss {
		if s.scrolls {
			return max(alloc[i]-1, 1)
		}
	}
	return 1
}

// navKey moves the focused list on ↑↓, PgUp/PgDn, Home/End; false: not
// such a key.
func (m *Model) navKey(key string) bool {
	var d int
	switch key {
	case "up", "k":
		d = -1
	case "down", "j":
		d = 1
	case "pgup", "ctrl+b":
		d = -m.page()
	case "pgdown", "ctrl+f", "space":
		d = m.page()
	case "home", "g":
		d = -1 << 30
	case "end", "G":
		d = 1 << 30
	default:
		return false
	}
	if m.focus == focusRuns {
		m.move(max(min(d, 1<<20), -1<<20))
	} else {
		m.scroll(d)
	}
	return true
}

// wheel scrolls what is under the pointer: the user's runs move their
// selection a run a notch, anything else scrolls the GPU list.
func (m Model) wheel(w tea.MouseWheelMsg) (tea.Model, tea.Cmd) {
	if m.mode != modeMain && m.mode != modeFilter {
		return m, nil
	}
	d := 0
	switch w.Button {
	case tea.MouseWheelUp:
		d = -1
	case tea.MouseWheelDown:
		d = 1
	default:
		return m, nil
	}
	ss := m.shown()
	alloc := layout(ss, m.body())
	y := 1 // the headline's line is 0
	for i, s := range ss {
		if s.picks && w.Y >= y && w.Y < y+alloc[i] {
			m.move(d)
			return m, nil
		}
		y += alloc[i]
	}
	m.scroll(d * wheelStep)
	return m, nil
}

// body is the height the sections get: the screen less the headline and
// the footer (0: unknown, everything).
func (m Model) body() int {
	if m.height == 0 {
		return 0
	}
	return max(m.height-2, 0)
}
