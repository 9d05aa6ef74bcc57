package view

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
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
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		nl := bytes.HasSuffix(line, []byte("\n"))
		out.Write(bytes.TrimRight(line, " \n"))
		if nl {
			out.WriteByte('\n')
		}
	}
	_, err := w.Write(out.Bytes())
	return err
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
