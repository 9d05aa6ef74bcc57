package top

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// The filter (`/`): the GPU list and the queue keep the rows whose text
// holds what was typed, case-insensitively, as htop's filter keeps the
// processes whose command line does. A row's text is its cells as the
// hosts gave them, before a column cuts them: a GPU's host and every user
// on it (a claim's, a process's, the run kept for), its state; a queue
// entry's run and user. Any column added later is matched too. The user's
// own runs are not filtered: the selection and x act on them.

// rowKeys are rows' cells, joined and lowered, for the filter.
func rowKeys(rows [][]string) []string {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = strings.ToLower(strings.Join(r, "\x00"))
	}
	return keys
}

// filtered is s with only the rows that match f; a section without keys
// is not filtered. shown says how many rows matched of how many.
func filtered(s section, f string) section {
	if f == "" || s.keys == nil {
		return s
	}
	f = strings.ToLower(f)
	var rows, keys []string
	for i, k := range s.keys {
		if strings.Contains(k, f) {
			rows, keys = append(rows, s.rows[i]), append(keys, k)
		}
	}
	s.matched, s.of = len(rows), len(s.rows)
	s.rows, s.keys = rows, keys
	return s
}

// filterKey is a key while the filter is typed: it is applied as it is
// typed; enter keeps it, esc drops it.
func (m Model) filterKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "enter":
		m.mode = modeMain
	case "esc":
		m.mode, m.filter = modeMain, ""
	case "backspace":
		if r := []rune(m.filter); len(r) > 0 {
			m.filter = string(r[:len(r)-1])
		}
	case "ctrl+u":
		m.filter = ""
	default:
		// Printable text only: what a key types, never a control byte.
		if t := k.Text; t != "" && !strings.ContainsFunc(t, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			m.filter += t
		}
	}
	m.gpuOff = 0 // the rows changed: from the top
	return m, nil
}
