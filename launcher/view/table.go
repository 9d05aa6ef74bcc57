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
//
// Each row is one line; on a terminal (TableWidth(w) > 0) it is cut to the
// terminal's width, whole otherwise: the rule of every table (width.go).
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	return writeTable(w, header, rows, nil)
}

// writeTable is WriteTable with colour: sgr, when not nil, gives each
// cell's SGR code ("" for none). The colour is added to the rendered
// table, around the cell's text where the columns put it: given to
// tablewriter, escape codes come back with resets of its own in the next
// cell and defeat the trimming of trailing blanks. So the columns are
// those of the plain table, byte for byte (TestStatusColor). Each line
// is cut to w's TableWidth last, colour and all (width.go).
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
	width := TableWidth(w)
	var out bytes.Buffer
	for i, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		nl := bytes.HasSuffix(line, []byte("\n"))
		line = bytes.TrimRight(line, " \n")
		if sgr != nil && i > 0 && i <= len(rows) {
			line = paintRow(line, rows[i-1], starts, func(col int) string { return sgr(i-1, col) })
		}
		out.WriteString(CutLine(string(line), width))
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
