package cli

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// A command's --help: its flags in groups, in the order a user reaches
// for them (what the job is, where it goes, how the run is kept, which
// hosts and how to reach them), each with a placeholder that says what
// its value is, descriptions wrapped to helpWidth columns. A flag joins
// a group by its Category; one with none is listed under OPTIONS, first
// when the command has such flags of its own, else last with --help.

// helpWidth is the widest line of any help.
const helpWidth = 100

// The groups, by the Category their flags carry, in the order of help.
const (
	catJob       = "job"
	catPlacement = "placement"
	catRun       = "run control"
	catOutput    = "output"
	catHosts     = "hosts and SSH"
	catSlurm     = "slurm (--on slurm)"
)

var categoryOrder = []string{catJob, catPlacement, catRun, catOutput, catSlurm, catHosts}

// flagColumn bounds the column of a flag's names: an entry wider than it
// has its description on the lines below.
const flagColumn = 30

func init() {
	cli.HelpPrinter = func(w io.Writer, templ string, data any) {
		cli.HelpPrinterCustom(w, templ, data, map[string]any{
			"wrapAt":   func() int { return helpWidth },
			"flagHelp": flagHelp,
		})
	}
}

// commandHelpTemplate is urfave/cli's CommandHelpTemplate with the flags
// written by flagHelp.
const commandHelpTemplate = `NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}{{if .VisibleFlags}}
{{flagHelp .VisibleFlags}}{{end}}
`

// flagHelp writes flags in their groups.
func flagHelp(flags []cli.Flag) string {
	groups := map[string][]cli.Flag{}
	var extra []string // categories not in categoryOrder, as met
	for _, f := range flags {
		cat := category(f)
		if _, seen := groups[cat]; !seen && cat != "" && !slices.Contains(categoryOrder, cat) {
			extra = append(extra, cat)
		}
		groups[cat] = append(groups[cat], f)
	}
	order := slices.Concat(categoryOrder, extra)
	if slices.ContainsFunc(groups[""], func(f cli.Flag) bool { return f != cli.HelpFlag }) {
		order = append([]string{""}, order...)
	} else {
		order = append(order, "")
	}
	col := 0
	for _, f := range flags {
		if n := len(flagEntry(f)); n <= flagColumn {
			col = max(col, n)
		}
	}
	var b strings.Builder
	for _, cat := range order {
		if len(groups[cat]) == 0 {
			continue
		}
		heading := "OPTIONS"
		if cat != "" {
			heading = strings.ToUpper(cat)
		}
		b.WriteString("\n" + heading + ":\n")
		for _, f := range groups[cat] {
			writeFlag(&b, f, col)
		}
	}
	return b.String()
}

// writeFlag writes one flag's entry: its names in a column col wide,
// then its description.
func writeFlag(b *strings.Builder, f cli.Flag, col int) {
	names := flagEntry(f)
	indent := 3 + col + 2
	lines := wrapWords(description(f), helpWidth-indent)
	b.WriteString("   " + names)
	if len(names) > col {
		b.WriteString("\n")
	} else if len(lines) > 0 {
		b.WriteString(strings.Repeat(" ", col-len(names)+2) + lines[0])
		lines = lines[1:]
		b.WriteString("\n")
	}
	for _, l := range lines {
		b.WriteString(strings.Repeat(" ", indent) + l + "\n")
	}
}

// flagEntry is a flag's entry as typed: -H, --host [user@]host[:port].
func flagEntry(f cli.Flag) string {
	names := slices.Clone(f.Names())
	slices.SortStableFunc(names, func(a, b string) int { return min(len(a), 2) - min(len(b), 2) })
	for i, n := range names {
		names[i] = dashed(n)
	}
	s := strings.Join(names, ", ")
	if takesValue(f) {
		s += " " + placeholder(f)
	}
	return s
}

// placeholder names a flag's value: the backquoted word of its usage, or
// else what its kind takes.
func placeholder(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		if name, _ := unquoteUsage(d.GetUsage()); name != "" && name != "value" {
			return name
		}
	}
	switch f.(type) {
	case *cli.DurationFlag:
		return "D"
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag:
		return "N"
	}
	return "VALUE"
}

// description is a flag's usage, with its default when that is a value
// (not a zero, which means none) and the environment variable it reads.
func description(f cli.Flag) string {
	d, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	_, s := unquoteUsage(d.GetUsage())
	if _, isBool := f.(*cli.BoolFlag); !isBool {
		def := d.GetDefaultText()
		if u, err := strconv.Unquote(def); err == nil {
			def = u
		}
		if _, isDuration := f.(*cli.DurationFlag); isDuration {
			def = shortDuration(def)
		}
		if !slices.Contains([]string{"", "0", "0s", "false", "[]"}, def) {
			s += " (default: " + def + ")"
		}
	}
	if env := d.GetEnvVars(); len(env) > 0 {
		s += " [$" + strings.Join(env, ", $") + "]"
	}
	return s
}

func category(f cli.Flag) string {
	if c, ok := f.(cli.CategorizableFlag); ok {
		return c.GetCategory()
	}
	return ""
}

// wrapWords breaks s into lines at most width wide, at spaces; a word
// wider than width has a line of its own.
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// unquoteUsage is urfave/cli's reading of a usage: its first backquoted
// word is the placeholder, kept in the text without the quotes.
func unquoteUsage(usage string) (name, text string) {
	before, rest, ok := strings.Cut(usage, "`")
	if !ok {
		return "", usage
	}
	name, after, ok := strings.Cut(rest, "`")
	if !ok {
		return "", usage
	}
	return name, before + name + after
}

// shortDuration writes a duration as a user types it: 5m, 24h, 1h30m,
// not 5m0s, 24h0m0s, 1h30m0s.
func shortDuration(d string) string {
	if strings.HasSuffix(d, "m0s") {
		d = strings.TrimSuffix(d, "0s")
	}
	if strings.HasSuffix(d, "h0m") {
		d = strings.TrimSuffix(d, "0m")
	}
	return d
}
