package view

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// longReason is a driver's message as long as they come: 170 columns.
const longReason = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " +
	"Make sure that the latest NVIDIA driver is installed and running. (exit 9) «détail» 李雷"

func longStatusFleet() (inventory.Inventory, [][]schedule.GPUStatus) {
	inv, st := statusFleet()
	inv.Hosts[1].DriverError = longReason
	return inv, st
}

// lines are s's lines, without the last one's newline.
func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// Into a pipe (any writer that is not a terminal) every row is one line,
// whole: a host's long reason is on its row, not on lines below it.
func TestTableRowsWholeIntoAPipe(t *testing.T) {
	inv, st := longStatusFleet()
	var b bytes.Buffer
	if err := WriteStatusTable(&b, inv, st, false); err != nil {
		t.Fatal(err)
	}
	got := lines(b.String())
	if len(got) != 1+4+3 {
		t.Fatalf("%d lines for a header and 7 rows:\n%s", len(got), b.String())
	}
	for _, l := range got {
		if strings.HasPrefix(l, " ") || strings.HasSuffix(l, "…") && !strings.Contains(l, "configs/very/l…") {
			t.Errorf("a continuation or a cut line: %q", l)
		}
	}
	if !strings.HasPrefix(got[2], "broken ") || !strings.HasSuffix(got[2], "  "+longReason) {
		t.Errorf("the driver's message is not whole on its row: %q", got[2])
	}
	// The plan's NOTE too, and a task's command.
	p := planWithLongNote(t)
	b.Reset()
	if err := WritePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  "+longNote+"\n") || !strings.Contains(b.String(), " "+strings.Repeat("x", 150)+"\n") {
		t.Errorf("the plan's NOTE or COMMAND is not whole:\n%s", b.String())
	}
}

// On a terminal every line of a table is at most its width, cut with an
// ellipsis: never wrapped, whatever the table. Lines that fit are as a
// pipe gets them, and colour stays whole where a line is cut.
func TestTableRowsCutOnTerminal(t *testing.T) {
	inv, st := longStatusFleet()
	for _, width := range []int{100, 60, 20} {
		for _, color := range []bool{false, true} {
			var pipe, term bytes.Buffer
			if err := WriteStatusTable(&pipe, inv, st, color); err != nil {
				t.Fatal(err)
			}
			if err := WriteStatusTable(OnTerminal(&term, width), inv, st, color); err != nil {
				t.Fatal(err)
			}
			whole, cut := lines(pipe.String()), lines(term.String())
			if len(cut) != len(whole) {
				t.Fatalf("width %d: %d lines on a terminal, %d into a pipe:\n%s", width, len(cut), len(whole), term.String())
			}
			for i, l := range cut {
				switch w := ansi.StringWidth(l); {
				case ansi.StringWidth(whole[i]) <= width:
					if l != whole[i] {
						t.Errorf("width %d: a line that fits changed: %q, want %q", width, l, whole[i])
					}
				case w > width:
					t.Errorf("width %d: a line of %d columns: %q", width, w, l)
				case !strings.HasSuffix(ansi.Strip(l), "…"):
					t.Errorf("width %d: a cut line without its ellipsis: %q", width, l)
				case color && strings.Count(l, "\x1b[") != strings.Count(whole[i], "\x1b["):
					t.Errorf("width %d: a cut line lost colour codes: %q of %q", width, l, whole[i])
				}
			}
		}
	}

	// Every table goes the same way: plan's (its NOTE), ps's, a generic one.
	p := planWithLongNote(t)
	var term bytes.Buffer
	if err := WritePlan(OnTerminal(&term, 80), p); err != nil {
		t.Fatal(err)
	}
	sawNote := false
	for _, l := range lines(term.String()) {
		if w := ansi.StringWidth(l); w > 80 && !strings.HasPrefix(l, "run ") {
			t.Errorf("plan: a line of %d columns: %q", w, l)
		}
		if strings.HasPrefix(l, "cpu01 ") && strings.HasSuffix(l, "…") && ansi.StringWidth(l) == 80 {
			sawNote = true
		}
	}
	if !sawNote {
		t.Errorf("plan: the NOTE is not cut at 80 columns:\n%s", term.String())
	}
	term.Reset()
	if err := WriteTable(OnTerminal(&term, 30), []string{"A", "B"}, [][]string{{"1", strings.Repeat("b", 40)}, {"2", "short"}}); err != nil {
		t.Fatal(err)
	}
	if want := "A  B\n1  " + strings.Repeat("b", 26) + "…\n2  short\n"; term.String() != want {
		t.Errorf("generic table:\n%q\nwant\n%q", term.String(), want)
	}
	if TableWidth(&term) != 0 || TableWidth(OnTerminal(&term, 30)) != 30 {
		t.Error("TableWidth: a buffer is no terminal, OnTerminal is one")
	}
}

// The plan of chief-evaluator, with a host whose NOTE is 220 columns
// long and a command of 150.
const longNote = "not used: " + "ssh: dial 10.0.0.4:22: a reason that goes on and on, as a proxy's or a policy's may, " +
	"naming every rule it read and every address it tried before it gave up, far past any terminal's edge"

func planWithLongNote(t *testing.T) *schedule.Plan {
	t.Helper()
	fx := planFixtures()["chief-evaluator"]
	req := schedule.NewRequest()
	req.RunID = "20260101-120000-ab12"
	fx.req(&req)
	req.Command = []string{"python", strings.Repeat("x", 150)}
	p, err := schedule.Make(fx.inv, req)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := range p.Matrix {
		if p.Matrix[i].Host == "cpu01" {
			p.Matrix[i].Note, found = longNote, true
		}
	}
	if !found {
		t.Fatalf("no cpu01 in the matrix: %+v", p.Matrix)
	}
	return p
}

// A redrawn screen fits the terminal: at most height lines, each at most
// width columns, its head and tail kept and the table's last rows given
// up for a line that counts them; no newline after its last line (one
// would scroll the terminal).
func TestScreen(t *testing.T) {
	var table strings.Builder
	table.WriteString("HOST  DETAIL\n")
	for i := range 10 {
		fmt.Fprintf(&table, "h%d    %s\n", i, strings.Repeat("x", 30))
	}
	head := []string{"Every 2s: tfhive status    12:00:00    hosts from a file whose path is long", ""}
	tail := []string{"tfhive: warning: h9: connect timed out"}

	got := Screen(head, table.String(), tail, 30, 8)
	x := strings.Repeat("x", 23)
	want := "Every 2s: tfhive status    12…\n" +
		"\n" +
		"HOST  DETAIL\n" +
		"h0    " + x + "…\n" +
		"h1    " + x + "…\n" +
		"h2    " + x + "…\n" +
		"… 7 more rows\n" +
		"tfhive: warning: h9: connect …"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// Room for all: the whole table, still no last newline.
	if got := Screen(head, table.String(), nil, 200, 13); got != strings.Join(head, "\n")+"\n"+strings.TrimSuffix(table.String(), "\n") {
		t.Errorf("room for all:\n%q", got)
	}
	// Smaller than its head: the first lines, the last saying what is hidden.
	if got := Screen(head, table.String(), tail, 40, 2); got != "Every 2s: tfhive status    12:00:00    …\n… 13 more lines" {
		t.Errorf("height 2:\n%q", got)
	}
	for h := 1; h <= 14; h++ {
		if n := len(strings.Split(Screen(head, table.String(), tail, 30, h), "\n")); n > h {
			t.Errorf("height %d: %d lines", h, n)
		}
	}
}
