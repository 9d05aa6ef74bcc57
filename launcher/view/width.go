package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Width: one rule for every table tfhive prints (status, plan, ps, queue,
// runs, doctor, a sweep's, a run's summary), applied in one place
// (writeTable), so that no command has a layout of its own.
//
//   - A row is one line, always: never wrapped onto lines below it.
//     Scripts grep and awk one line per GPU, host, run or task, and a
//     continuation line is a row that names no host.
//   - On a terminal each line is cut to the terminal's width, an
//     ellipsis ("…") ending what was cut, rather than left for the
//     terminal to wrap: a wrapped row reads as two, and a screen redrawn
//     in place (status --watch, ps --watch) would scroll off its own top.
//     The width is the terminal's own, asked at each table (resizing
//     counts); where the terminal does not say, $COLUMNS, then 100 (the
//     commands' side: commands/color.go). A redrawn screen is cut to the
//     terminal's height too (Screen).
//   - Into a pipe or a file, nothing is cut: there is no width to fit,
//     and the text cut off a terminal (a driver's message, a plan's NOTE,
//     a command) is what a script or a log reader came for.
//   - --json is whole everywhere, terminal or not.
//
// Cell caps are the columns' own and the same everywhere (a process's
// command in status's DETAIL, a captured value in runs: 40): they keep
// one long value from pushing the next columns off; --json has it whole.
// Lines that are not table rows (a plan's or a run's summary line, a
// warning) are sentences, whole wherever they go.
//
// A cut counts display columns as terminals do (a wide character takes
// two) in the sanitised text, and keeps colour codes whole.

// Ellipsis ends a line or a cell that was cut.
const Ellipsis = "…"

// A writer with a TableWidth method is a terminal: tables written to it
// are cut to that many columns (0: not a terminal, rows whole). The
// commands' stdout is one, asking its terminal at each table.
type tableWidther interface{ TableWidth() int }

// TableWidth is the width tables written to w are cut to: 0 when w is no
// terminal (a pipe, a file, a buffer), rows whole.
func TableWidth(w io.Writer) int {
	if t, ok := w.(tableWidther); ok {
		return max(t.TableWidth(), 0)
	}
	return 0
}

// OnTerminal is w as a terminal width columns wide: the tables written to
// it are cut to width, as on that terminal (a screen drawn into a buffer
// before it is shown; tests).
func OnTerminal(w io.Writer, width int) io.Writer { return terminal{w, width} }

type terminal struct {
	io.Writer
	width int
}

func (t terminal) TableWidth() int { return t.width }

// CutLine cuts line to width display columns, its last an ellipsis where
// the text was cut (after blanks when a cell ended there: the next
// column's start is what was cut), colour codes kept whole; a line that
// fits, or width 0, leaves it as it is.
func CutLine(line string, width int) string {
	if width <= 0 || ansi.StringWidth(line) <= width {
		return line
	}
	return ansi.Truncate(line, width, Ellipsis)
}

// Screen is what a view redrawn in place (status --watch, ps --watch)
// shows on a terminal width×height: its head lines (a header), table (a
// rendered table, its lines cut already or not) and tail lines (warnings)
// in at most height lines, each cut to width. When they do not fit, the
// table gives up its last rows for a line that counts them ("… 12 more
// rows"), head, tail and the table's header kept; a terminal too small
// even for that shows the first lines and how many more. There is no
// newline after the last line: on the terminal's last row one would
// scroll the screen by a line. height 0: as many lines as there are.
func Screen(head []string, table string, tail []string, width, height int) string {
	rows := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if table == "" {
		rows = nil
	}
	var lines []string
	room := height - len(head) - len(tail)
	switch {
	case height <= 0 || len(rows) <= room:
		lines = append(append(append(lines, head...), rows...), tail...)
	case room >= 2: // the table's header and the count, at the least
		keep := room - 1
		lines = append(append(lines, head...), rows[:keep]...)
		lines = append(append(lines, fmt.Sprintf("%s %d more rows", Ellipsis, len(rows)-keep)), tail...)
	default:
		all := append(append(append(lines, head...), rows...), tail...)
		keep := height - 1
		lines = append(all[:keep:keep], fmt.Sprintf("%s %d more lines", Ellipsis, len(all)-keep))
	}
	for i, l := range lines {
		lines[i] = CutLine(l, width)
	}
	return strings.Join(lines, "\n")
}
