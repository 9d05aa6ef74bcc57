package commands

import (
	"io"
	"os"

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

// termWidth is w's width in columns when it is a terminal that says,
// else 0.
func termWidth(w io.Writer) int {
	if s, ok := w.(*Stdout); ok {
		w = s.w
	}
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			return cols
		}
	}
	return 0
}

// redraws says whether a line may be redrawn in place on w (a terminal,
// not TERM=dumb).
func redraws(w io.Writer) bool { return view.Redraws(isTerminal(w), os.Getenv) }
