package cli

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/commands"
	"github.com/tfhive/tfhive/launcher/help"
)

// onUsage puts urfave/cli's (and package flag's) parse errors in tfhive's
// voice; they all mean bad usage, exit 2.
func onUsage(c *cli.Context, err error, _ bool) error {
	msg := strings.TrimPrefix(err.Error(), "flag: ")
	isRoot := c.Command.Name == c.App.Name
	seeHelp := c.App.Name + " --help"
	if !isRoot {
		seeHelp = c.App.Name + " " + c.Command.Name + " --help"
	}
	e := &commands.UsageError{Msg: msg, Fix: "see `" + seeHelp + "`"}
	// This message stays in package flag's words: the e2e tests (and
	// perhaps scripts) match it.
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if isRoot && commandFlag(c.App, name) {
			e.Fix = fmt.Sprintf("%s is a command's flag: put it after the command name", dashed(name))
		} else if near := closest(name, flagNames(c.Command.Flags)); near != "" {
			e.Fix = fmt.Sprintf("did you mean %s?", dashed(near))
		} else if owners := flagOwners(c.App, name); !isRoot && len(owners) > 0 {
			e.Fix = fmt.Sprintf("%s is not a flag of %s; %s %s it", dashed(name), c.Command.Name,
				andList(owners), map[bool]string{true: "takes", false: "take"}[len(owners) == 1])
		}
		if c.Command.Name == "sweep" && name == "emit" {
			// A sweep has a Slurm form, but plan writes it: say where.
			e.Fix = "a sweep's Slurm job array is `" + c.App.Name + " plan --emit slurm --param NAME=V1,V2,… -- COMMAND`"
		}
		return e
	}
	if m := invalidValueRE.FindStringSubmatch(msg); m != nil {
		// "parse error" says nothing the value does not; the flag's kind
		// does.
		e.Msg = fmt.Sprintf("invalid value %s for %s", m[1], dashed(m[2]))
		if m[3] != "parse error" {
			e.Msg += ": " + m[3]
		}
		if kind := flagKind(c.Command.Flags, m[2]); kind != "" {
			e.Fix = dashed(m[2]) + " takes " + kind
		}
		return e
	}
	if m := twoFormsRE.FindStringSubmatch(msg); m != nil {
		e.Msg = fmt.Sprintf("%s and %s are the same flag", dashed(m[2]), dashed(m[1]))
		e.Fix = "use one of them"
		return e
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		e.Msg = fmt.Sprintf("flag %s needs a value", dashed(name))
	}
	return e
}

var (
	invalidValueRE = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-(\S+): (.*)$`)
	twoFormsRE     = regexp.MustCompile(`^Cannot use two forms of the same flag: (\S+) (\S+)$`)
)

// dashed writes a flag name as it is typed: -H, --host.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func flagNames(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

func commandFlag(app *cli.App, name string) bool {
	for _, cmd := range app.Commands {
		if slices.Contains(flagNames(cmd.Flags), name) {
			return true
		}
	}
	return false
}

// flagOwners names the commands, in the app's order, with a flag of that
// name: for a flag given to the wrong command.
func flagOwners(app *cli.App, name string) []string {
	var out []string
	for _, cmd := range app.Commands {
		if !cmd.Hidden && slices.Contains(flagNames(cmd.Flags), name) {
			out = append(out, cmd.Name)
		}
	}
	return out
}

// andList writes "a", "a and b", "a, b and c", or the first three and
// "others" beyond.
func andList(names []string) string {
	if len(names) > 3 {
		names = append(names[:3:3], "others")
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// flagKind names what a flag's value must look like, for the hint.
func flagKind(flags []cli.Flag, name string) string {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		switch f.(type) {
		case *cli.DurationFlag:
			return "a duration such as 500ms, 10s, 2m or 1h30m"
		case *cli.IntFlag:
			return "a whole number"
		case *cli.BoolFlag:
			return "no value, or =true / =false"
		}
	}
	return ""
}

// rootCmd runs when no command was named: help, or an unknown command.
// `help [COMMAND|GUIDE]` works although it is not listed.
func rootCmd(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return cli.ShowAppHelp(c)
	}
	if args[0] != "help" {
		return unknownCommand(c, args[0])
	}
	switch {
	case len(args) == 1:
		return cli.ShowAppHelp(c)
	case len(args) > 2:
		return &commands.UsageError{Msg: fmt.Sprintf("unexpected argument %q", args[2]), Fix: "see `" + c.App.Name + " --help`"}
	case c.App.Command(args[1]) == nil:
		return showGuide(c, args[1])
	}
	return cli.ShowCommandHelp(c, args[1])
}

// showGuide prints the guide `tfhive help NAME` names, or says there is
// no such command or guide.
func showGuide(c *cli.Context, name string) error {
	text, ok := help.Guide(name)
	if !ok {
		return unknownTopic(c, name)
	}
	_, err := io.WriteString(c.App.Writer, text)
	return err
}

// helpNotFound is the error for a help topic urfave/cli cannot find
// (`tfhive --help NAME`): a guide is printed.
func helpNotFound(c *cli.Context, name string) error {
	if c.Command.Name == c.App.Name {
		return showGuide(c, name)
	}
	return &commands.UsageError{Msg: fmt.Sprintf("unexpected argument %q", name), Fix: "see `" + c.App.Name + " " + c.Command.Name + " --help`"}
}

func unknownCommand(c *cli.Context, name string) error {
	e := &commands.UsageError{Msg: fmt.Sprintf("unknown command %q", name)}
	if near := closest(name, commandNames(c.App)); near != "" {
		e.Fix = fmt.Sprintf("did you mean %q?", near)
	}
	return e
}

// unknownTopic is `tfhive help NAME` where NAME is neither a command nor
// a guide.
func unknownTopic(c *cli.Context, name string) error {
	e := &commands.UsageError{Msg: fmt.Sprintf("unknown command or guide %q", name), Fix: "`" + c.App.Name + " help` lists the commands and the guides"}
	if near := closest(name, append(commandNames(c.App), help.Names()...)); near != "" {
		e.Fix = fmt.Sprintf("did you mean %q?", near)
	}
	return e
}

func commandNames(app *cli.App) []string {
	var names []string
	for _, cmd := range app.Commands {
		if !cmd.Hidden {
			names = append(names, cmd.Names()...)
		}
	}
	return names
}

// guidesHelp is the end of `tfhive help`: the guides, after the commands.
func guidesHelp() string {
	var b strings.Builder
	b.WriteString("\nGUIDES (tfhive help TOPIC):\n")
	topics := help.Topics()
	width := 0
	for _, t := range topics {
		width = max(width, len(t.Name))
	}
	for _, t := range topics {
		fmt.Fprintf(&b, "   %-*s  %s\n", width, t.Name, t.Title)
	}
	// The text is a template's: braces of a title stay text.
	return strings.NewReplacer("{{", `{{"{{"}}`, "}}", `{{"}}"}}`).Replace(b.String())
}

// closest returns the candidate a typo most likely meant, or "" when none
// is close: within two edits (a swap of neighbours counts as one), fewer
// edits than the word has letters, or the only candidate it begins.
func closest(word string, candidates []string) string {
	best, bestDist := "", 3
	for _, cand := range candidates {
		if d := editDistance(word, cand); d < bestDist && d < len([]rune(word)) {
			best, bestDist = cand, d
		}
	}
	if best != "" {
		return best
	}
	var prefixed []string
	for _, cand := range candidates {
		if len(word) >= 2 && strings.HasPrefix(cand, word) {
			prefixed = append(prefixed, cand)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent letters.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}
