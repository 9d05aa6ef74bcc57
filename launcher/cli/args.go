package cli

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// Flags anywhere: urfave/cli v2 reads a command's flags as package flag
// does, up to the first argument, so `tfhive logs RUN --task worker:1`
// would leave --task an argument. Rather than move to v3 (which reads
// flags anywhere, but is another library's API for every command and
// flag of the design card's v2), flagsFirst moves the flags a user
// typed after a command's arguments to before them, and v2 reads the
// line as it always did.

// flagsFirst returns args (args[0] the program) with each command's
// flags, and the values of those that take one, moved before its
// arguments. It stops at "--", after which everything is the task's,
// and for run and plan at their first argument, which begins the task's
// command (`tfhive run -H h python train.py --lr 0.1`: --lr is the
// script's). Root flags (--help, --version) take no value, a word
// naming no command is left as it is, and so is a line that asks for a
// flag's value it never gives (`logs RUN --task`) but for its arguments,
// dropped so that the parser says the value is missing.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	i := 1
	for i < len(args) && isFlagWord(args[i]) {
		i++
	}
	if i == len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil || cmd.SkipFlagParsing || argsAreTask(cmd) {
		return args
	}
	out := slices.Clone(args[:i+1])
	var pos []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		w := rest[j]
		if w == "--" {
			pos = append(pos, rest[j:]...)
			break
		}
		if !isFlagWord(w) {
			pos = append(pos, w)
			continue
		}
		out = append(out, w)
		if !wantsNextWord(cmd.Flags, w) {
			continue
		}
		if j+1 == len(rest) {
			return out // its value is missing: the parser says so
		}
		j++
		out = append(out, rest[j])
	}
	return append(out, pos...)
}

// isFlagWord says whether package flag reads w as a flag: "-" alone is
// an argument (stdin), "--" ends the flags.
func isFlagWord(w string) bool {
	return len(w) > 1 && w[0] == '-' && w != "--"
}

// wantsNextWord says whether flag word w (-x, --x, not --x=v) takes the
// next word as its value: a flag of flags that takes a value. An unknown
// flag takes none; the parser refuses it anyway.
func wantsNextWord(flags []cli.Flag, w string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := lookupFlag(flags, name)
	return f != nil && takesValue(f)
}

// argsAreTask says whether a command's arguments are the task's command
// line (run, plan), whose words from the first on are never tfhive's.
func argsAreTask(cmd *cli.Command) bool { return argsOf[cmd.Name] == commandArg }
