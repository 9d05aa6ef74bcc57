package commands

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/term"

	"github.com/tfhive/tfhive/launcher/view"
)

// colors says whether what goes to w is coloured: --color, then whether w
// is a terminal, TERM and NO_COLOR (view.UseColor, the one rule). A
// --color that is not auto, always or never is a usage error (exit 2).
func (s Streams) colors(w io.Writer) (bool, error) {
	mode, err := view.ParseColorMode(s.Color)
	if err != nil {
		return false, &UsageError{Msg: err.Error()}
	}
	return view.UseColor(mode, isTerminal(w), os.Getenv), nil
}

// termSize is w's size in columns and rows when it is a terminal, 0, 0
// when it is not. A terminal that does not say (a pseudo-terminal nobody
// sized, a serial line) is taken at $COLUMNS × $LINES, then 100 × 24: 100
// is the width of tfhive's help, 24 the rows every terminal has.
func termSize(w io.Writer) (cols, rows int) {
	if s, ok := w.(*Stdout); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, 0
	}
	cols, rows, err := term.GetSize(int(f.Fd()))
	if err != nil {
		cols, rows = 0, 0
	}
	or := func(n int, env string, dflt int) int {
		if n > 0 {
			return n
		}
		if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
			return v
		}
		return dflt
	}
	return or(cols, "COLUMNS", 100), or(rows, "LINES", 24)
}

// termWidth is w's width in columns when it is a terminal (termSize),
// else 0.
func termWidth(w io.Writer) int {
	cols, _ := termSize(w)
	return cols
}

// TableWidth makes stdout a terminal to the tables written to it: each
// row cut to the terminal's width now, or 0 (whole) when stdout is not
// one (view's width.go has the rule).
func (s *Stdout) TableWidth() int { return termWidth(s) }

// redraws says whether a line may be redrawn in place on w (a terminal,
// not TERM=dumb).
func redraws(w io.Writer) bool { return view.Redraws(isTerminal(w), os.Getenv) }
