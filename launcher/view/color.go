package view

import (
	"fmt"
	"strings"

	"github.com/tfhive/tfhive/schedule"
)

// Colour: one rule for every line and table tfhive colours (task
// prefixes on the console and in logs -H, status's STATE column).
//
//   - --color auto (the default) colours a stream only when it is a
//     terminal, TERM is not "dumb" and NO_COLOR is empty (no-color.org:
//     a non-empty NO_COLOR turns colour off).
//   - --color always and --color never decide alone: the command line
//     beats the environment, as with ls, git and ripgrep.
//   - Colour never changes what is shown, only how: --json has none, and
//     a table's columns are as wide with it as without.
//
// Colour is not sanitising: a terminal gets its bytes from hosts and
// tasks made inert whatever the colour (sanitize.go).

// ColorMode is --color's value.
type ColorMode string

// The values of --color.
const (
	ColorAuto   ColorMode = "auto"
	ColorAlways ColorMode = "always"
	ColorNever  ColorMode = "never"
)

// ParseColorMode reads --color; "" is auto.
func ParseColorMode(s string) (ColorMode, error) {
	switch m := ColorMode(strings.ToLower(s)); m {
	case "":
		return ColorAuto, nil
	case ColorAuto, ColorAlways, ColorNever:
		return m, nil
	}
	return "", fmt.Errorf("--color %q: want auto, always or never", s)
}

// UseColor is the rule: whether to colour a stream under mode, given
// whether the stream is a terminal and the environment (getenv, as
// os.Getenv).
func UseColor(mode ColorMode, terminal bool, getenv func(string) string) bool {
	switch mode {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	}
	return terminal && Redraws(terminal, getenv) && getenv("NO_COLOR") == ""
}

// Redraws says whether a line may be redrawn in place ("\r\x1b[K") on a
// stream: it is a terminal that understands the erase, not TERM=dumb.
func Redraws(terminal bool, getenv func(string) string) bool {
	return terminal && getenv("TERM") != "dumb"
}

// SGR codes of the colours tfhive uses.
const (
	sgrRed     = "31"
	sgrGreen   = "32"
	sgrYellow  = "33"
	sgrMagenta = "35"
	sgrCyan    = "36"
	sgrBlue    = "94" // the bright one: plain blue is hard to read on a dark background
	sgrReset   = "\x1b[0m"
)

// stateColors colour status's STATE column: green what may be used now,
// yellow what another user's process holds, cyan and blue what tfhive
// runs hold or keep, magenta a rule's refusal, red what needs a person
// (a blocked lock, an intruder, a host that failed). States left out
// (excluded, no-gpus) stay plain: nothing will change them.
var stateColors = map[string]string{
	string(schedule.Free):     sgrGreen,
	string(schedule.Busy):     sgrYellow,
	string(schedule.Claimed):  sgrCyan,
	string(schedule.Queued):   sgrBlue,
	string(schedule.Refused):  sgrMagenta,
	string(schedule.Reserved): sgrMagenta,
	string(schedule.Blocked):  sgrRed,
	string(schedule.Intruder): sgrRed,
	stateUnreachable:          sgrRed,
	stateDriverError:          sgrRed,
}

// PaintState colours a GPU or host state as status's STATE column does
// (tfhive top's rows); a state without a colour stays plain.
func PaintState(state string) string { return paint(state, stateColors[state]) }

// taskColors colour the tasks' prefixes on the console, a hue a task in
// turn: the six every terminal has.
var taskColors = []string{sgrCyan, sgrYellow, sgrGreen, sgrMagenta, sgrBlue, sgrRed}

// PaintTask colours the console prefix of the nth task shown (from 0).
func PaintTask(label string, n int) string { return paint(label, taskColors[n%len(taskColors)]) }

// SGRReset ends what a line of task output coloured (AppendSanitized says
// when one did).
const SGRReset = sgrReset

// paint wraps s in SGR code sgr; "" leaves it plain.
func paint(s, sgr string) string {
	if sgr == "" || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + sgrReset
}
