package view

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteTable renders a borderless table in the style of `docker ps` and
// `kubectl get`: columns separated by spaces, no rules
// and no trailing blanks, so that it survives copy-paste, grep, awk and diff.
//
// Every cell is sanitised, on a terminal or not: cells come from hosts (GPU
// names, other users' user names and command lines), a table never needs a
// control byte, and a "\n" in a process name would forge a row.
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	return writeTable(w, header, rows, nil)
}

// writeTable is WriteTable with colour: sgr, when not nil, gives each
// cell's SGR code ("" for none). The colour is added to the rendered
// table, around the cell's text where the columns put it: given to
// tablewriter, escape codes come back with resets of its own in the next
// cell and defeat the trimming of trailing blanks. So the columns are
// those of the plain table, byte for byte (TestStatusColor).
func writeTable(w io.Writer, header []string, rows [][]string, sgr func(row, col int) string) error {
	header = SanitizeCells(header)
	safe := make([][]string, len(rows))
	for i, r := range rows {
		safe[i] = SanitizeCells(r)
	}
	rows = safe
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRendition(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		}),
		// Headers are given upper-case; auto-format would turn GPU0 into "GPU 0".
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	var starts []int
	if sgr != nil {
		starts = columnStarts(header, rows)
	}
	var out bytes.Buffer
	for i, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		nl := bytes.HasSuffix(line, []byte("\n"))
		line = bytes.TrimRight(line, " \n")
		if sgr != nil && i > 0 && i <= len(rows) {
			line = paintRow(line, rows[i-1], starts, func(col int) string { return sgr(i-1, col) })
		}
		out.Write(line)
		if nl {
			out.WriteByte('\n')
		}
	}
	_, err := w.Write(out.Bytes())
	return err
}

// columnStarts is where each column begins, in display columns: every
// column is as wide as its widest cell (as tablewriter measures it), then
// two blanks.
func columnStarts(header []string, rows [][]string) []int {
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for c, cell := range r {
			if c < len(widths) {
				widths[c] = max(widths[c], twwidth.Width(cell))
			}
		}
	}
	starts := make([]int, len(header))
	for c := 1; c < len(starts); c++ {
		starts[c] = starts[c-1] + widths[c-1] + 2
	}
	return starts
}

// paintRow wraps each cell of a rendered row that sgr gives a code in
// that colour. A cell not found where its column starts (a rune whose
// width tablewriter counts otherwise) stays plain: colour never moves a
// column.
func paintRow(line []byte, cells []string, starts []int, sgr func(col int) string) []byte {
	var out []byte
	done, width := 0, 0 // bytes of line copied to out, their display width
	for c, cell := range cells {
		code := sgr(c)
		if code == "" || cell == "" || c >= len(starts) {
			continue
		}
		at := done
		for w := width; w < starts[c] && at < len(line); {
			_, n := utf8.DecodeRune(line[at:])
			w += twwidth.Width(string(line[at : at+n]))
			at += n
		}
		if !bytes.HasPrefix(line[at:], []byte(cell)) {
			continue
		}
		out = append(out, line[done:at]...)
		out = append(out, paint(cell, code)...)
		width = starts[c] + twwidth.Width(cell)
		done = at + len(cell)
	}
	if out == nil {
		return line
	}
	return append(out, line[done:]...)
}

// IntList shows GPU indices or ports as "0,1", or "-" for none.
func IntList(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// SanitizeCells is a copy of cells made safe to print (the caller's rows are
// left alone).
func SanitizeCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = SanitizeCell(c)
	}
	return out
}

// writeTableWrapped is writeTable for a table at most width columns wide
// whose last column holds long texts (status's DETAIL): the last cell of a
// row that wrap says (nil: every row) that does not fit has what fits in its column, and the rest goes on in lines
// of their own below its row, indented to the second column (past the
// first, which says whose row it is) and as wide as the table may be, so
// that a long reason takes a few lines, not a line each few words. The
// cells are made safe first (SanitizeCells), so that the wrap counts what
// is shown.
func writeTableWrapped(w io.Writer, header []string, rows [][]string, sgr func(row, col int) string, width int, wrap func(row int) bool) error {
	last := len(header) - 1
	safe := make([][]string, len(rows))
	for i, r := range rows {
		safe[i] = SanitizeCells(r)
	}
	starts := columnStarts(header, safe)
	indent := 0
	if last > 0 {
		indent = starts[1]
	}
	more := make([][]string, len(rows))
	for i, r := range safe {
		cell := r[last]
		if starts[last]+twwidth.Width(cell) <= width || wrap != nil && !wrap(i) {
			continue
		}
		first, rest := fitWords(cell, width-starts[last])
		r[last] = first
		more[i] = wrapText(rest, max(width-indent, 20))
	}
	var buf bytes.Buffer
	if err := writeTable(&buf, header, safe, sgr); err != nil {
		return err
	}
	var out bytes.Buffer
	pad := strings.Repeat(" ", indent)
	for i, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		out.Write(line)
		if i > 0 && i <= len(rows) {
			for _, l := range more[i-1] {
				out.WriteString(pad + l + "\n")
			}
		}
	}
	_, err := w.Write(out.Bytes())
	return err
}

// fitWords splits s after the words that fit in width display columns:
// none when the first does not.
func fitWords(s string, width int) (string, string) {
	fit := 0 // bytes of s that fit
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], ' ')
		end := len(s)
		if j >= 0 {
			end = i + j
		}
		if twwidth.Width(s[:end]) > width {
			break
		}
		fit = end
		i = end + 1
	}
	return s[:fit], strings.TrimLeft(s[fit:], " ")
}

// wrapText breaks s into lines of at most width display columns, between
// words where it can.
func wrapText(s string, width int) []string {
	if twwidth.Width(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for twwidth.Width(word) > width {
			// Too long for any line: what is left of this one, then
			// lines of its own.
			if line != "" {
				lines, line = append(lines, line), ""
			}
			head, rest := splitAtWidth(word, width)
			lines, word = append(lines, head), rest
		}
		switch {
		case line == "":
			line = word
		case twwidth.Width(line)+1+twwidth.Width(word) <= width:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// splitAtWidth cuts s after at most width display columns (one rune at
// the least).
func splitAtWidth(s string, width int) (string, string) {
	w := 0
	for i, r := range s {
		rw := twwidth.Width(string(r))
		if w+rw > width && i > 0 {
			return s[:i], s[i:]
		}
		w += rw
	}
	return s, ""
}
