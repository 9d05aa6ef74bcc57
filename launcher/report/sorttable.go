package report

import (
	"cmp"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A table sortable by any column, each way, with no script (the page's
// CSP allows none): a CSS grid of cells, each row's rank in every
// column's order held by the row as custom properties (--aN rising,
// from 0), and a hidden radio button per column and way whose rule sets
// the cells' order from them. Numbers sort as numbers, other text as
// text, empty cells last either way; the header stays on top.

type sortTable struct {
	Head []string
	Rows []sortRow
	// Sorted is the column first sorted by (-1: the rows' own order),
	// Desc the way.
	Sorted int
	Desc   bool
}

type sortRow struct {
	Cells []string
	Best  bool
	// Style holds the row's ranks: --a0: 3; --a1: 0…
	Style template.CSS
}

// Cols, for the template: the grid's column count.
func (t sortTable) Cols() int { return len(t.Head) }

// CSS is the rules of the radio buttons: only numbers and the fixed
// ids, nothing a file held.
func (t sortTable) CSS() template.CSS {
	var b strings.Builder
	for j := range t.Head {
		n := strconv.Itoa(j)
		b.WriteString("#so-" + n + "-a:checked ~ .grid > div > span { order: var(--a" + n + "); }\n")
		b.WriteString("#so-" + n + "-d:checked ~ .grid > div > span { order: var(--d" + n + "); }\n")
		b.WriteString("#so-" + n + "-a:checked ~ .grid label[for=so-" + n + "-a], #so-" + n + "-d:checked ~ .grid label[for=so-" + n + "-d] { color: #c00; }\n")
	}
	return template.CSS(b.String())
}

// newSortTable ranks rows in each column.
func newSortTable(head []string, rows [][]string, best int) sortTable {
	t := sortTable{Head: head, Sorted: -1}
	for i, r := range rows {
		t.Rows = append(t.Rows, sortRow{Cells: r, Best: i == best})
	}
	styles := make([]strings.Builder, len(rows))
	for j := range head {
		idx := make([]int, len(rows))
		for i := range idx {
			idx[i] = i
		}
		for _, desc := range []bool{false, true} {
			slices.SortStableFunc(idx, func(a, b int) int { return cmpCells(cell(rows[a], j), cell(rows[b], j), desc) })
			k := "a"
			if desc {
				k = "d"
			}
			for rank, i := range idx {
				styles[i].WriteString("--" + k + strconv.Itoa(j) + ": " + strconv.Itoa(rank) + "; ")
			}
		}
	}
	for i := range t.Rows {
		t.Rows[i].Style = template.CSS(strings.TrimSpace(styles[i].String()))
	}
	return t
}

func cell(r []string, j int) string {
	if j < len(r) {
		return r[j]
	}
	return ""
}

// cmpCells orders two cells of a column: empty (or "-") last, numbers
// before words and by value, words as text.
func cmpCells(a, b string, desc bool) int {
	ea, eb := a == "" || a == "-", b == "" || b == "-"
	if ea || eb {
		return cmp.Compare(boolInt(ea), boolInt(eb))
	}
	fa, erra := cellNum(a)
	fb, errb := cellNum(b)
	var c int
	switch {
	case erra == nil && errb == nil && finite(fa) && finite(fb):
		c = cmp.Compare(fa, fb)
	case erra == nil && finite(fa):
		return -1
	case errb == nil && finite(fb):
		return 1
	default:
		c = strings.Compare(a, b)
	}
	if desc {
		return -c
	}
	return c
}

// cellNum is a cell's number: a number, or a duration in seconds.
func cellNum(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if d, derr := time.ParseDuration(s); derr == nil {
			return d.Seconds(), nil
		}
	}
	return f, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
