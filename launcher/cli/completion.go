package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/commands"
	"github.com/tfhive/tfhive/launcher/help"
	"github.com/tfhive/tfhive/schedule"
)

// Shell completion: `tfhive completion SHELL` prints a script, and the
// script asks the hidden `tfhive __complete WORD...` on every Tab, passing
// the words after "tfhive" up to the cursor. The answer is read from the
// app's own commands and flags, so the scripts hold no list that could go
// stale, and one parser serves the three shells.

func completionCommand(w wiring) *cli.Command {
	return &cli.Command{
		Name:         "completion",
		Usage:        "print the shell completion script for bash, zsh or fish",
		ArgsUsage:    "bash|zsh|fish",
		OnUsageError: onUsage,
		Action:       action(w.completion, commands.Completion),
	}
}

func (w wiring) completion(c *cli.Context) (commands.CompletionOptions, error) {
	o := commands.CompletionOptions{Streams: w.Streams, Shell: c.Args().First()}
	if c.NArg() > 1 {
		return o, &commands.UsageError{Msg: fmt.Sprintf("unexpected argument %q", c.Args().Get(1)), Fix: "see `tfhive completion --help`"}
	}
	return o, nil
}

// completeCommand answers the scripts. It never fails and never writes to
// stderr: whatever it cannot know is left out of the answer, which the
// shell shows in the middle of the user's command line.
func completeCommand(w wiring) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		HideHelp:        true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			complete(c.Context, c.App, c.Args().Slice()).write(w.Stdout)
			return nil
		},
	}
}

// completion is __complete's answer. Its first line is the kind and the
// prefix, tab-separated: "words" and candidates follow, one a line, each
// maybe with a tab and a description; "files" or "dirs" ask the shell to
// complete a local path itself (it knows ~, quoting and its own styles),
// after prefix (as in --hosts=FILE).
type completion struct {
	kind, prefix string
	words        []commands.Candidate
}

func (r completion) write(w io.Writer) {
	fmt.Fprintf(w, "%s\t%s\n", r.kind, r.prefix)
	for _, c := range r.words {
		if c.Desc == "" {
			fmt.Fprintln(w, c.Word)
		} else {
			fmt.Fprintf(w, "%s\t%s\n", c.Word, c.Desc)
		}
	}
}

// words answers with the candidates that begin with cur.
func words(cur string, cands []commands.Candidate) completion {
	r := completion{kind: "words"}
	for _, c := range cands {
		if strings.HasPrefix(c.Word, cur) {
			r.words = append(r.words, c)
		}
	}
	return r
}

// What a command's arguments are. A command missing here gets no
// completion for them.
type argKind int

const (
	liveRunArg argKind = iota + 1 // a run holding claims now
	anyRunArg                     // a run, running or with its logs here
	commandArg                    // the command tasks run (a local path, often)
	shellArg
)

var argsOf = map[string]argKind{
	"kill":        liveRunArg,
	"stacks":      liveRunArg,
	"attach":      anyRunArg,
	"logs":        anyRunArg,
	"wait":        anyRunArg,
	"report":      anyRunArg,
	"compare":     anyRunArg,
	"tensorboard": anyRunArg,
	"run":         commandArg,
	"plan":        commandArg,
	"completion":  shellArg,
}

// What flags' values are, by the flag's first name. Flags not here (a
// number, a duration, a remote directory) get no completion.
var valuesOf = map[string]func(ctx context.Context, l *cmdLine, prefix, cur string) completion{
	"host":       hostValues,
	"exclude":    excludeValues,
	"hosts":      pathValues("files"),
	"hostfile":   pathValues("files"),
	"ssh-config": pathValues("files"),
	"log-dir":    pathValues("dirs"),
	"log-root":   pathValues("dirs"),
	"output":     pathValues("files"),
	"sync":       pathValues("dirs"),
	"framework":  choices(schedule.FrameworkTF, schedule.FrameworkTorch),
	"strategy":   choices(schedule.StrategySpread, schedule.StrategyPack),
	"priority":   choices(schedule.PriorityLow, schedule.PriorityNormal, schedule.PriorityHigh),
	"emit":       choices(commands.EmitTargets...),
	"capture-from": func(_ context.Context, l *cmdLine, prefix, cur string) completion {
		return withPrefix(prefix+cur, prefix, commands.CompleteTasks(l.job()))
	},
	"sort": func(_ context.Context, l *cmdLine, prefix, cur string) completion {
		return withPrefix(prefix+cur, prefix, commands.CompleteMetrics(l.last("log-root")))
	},
}

// complete answers for args, the words after "tfhive": the last one is
// the word being completed (maybe empty).
func complete(ctx context.Context, app *cli.App, args []string) completion {
	if len(args) == 0 {
		args = []string{""}
	}
	done, cur := args[:len(args)-1], args[len(args)-1]
	i := 0
	for i < len(done) && strings.HasPrefix(done[i], "-") {
		i++ // the root's flags: --help and --version, which take no value
	}
	if i == len(done) {
		if strings.HasPrefix(cur, "-") {
			return words(cur, flagCandidates(app.Flags, nil))
		}
		return words(cur, append(commandCandidates(app), commands.Candidate{Word: "help", Desc: "show a command's flags, or a guide"}))
	}
	name, rest := done[i], done[i+1:]
	if name == "help" {
		if len(rest) == 0 {
			return words(cur, append(commandCandidates(app), guideCandidates()...))
		}
		return completion{kind: "words"}
	}
	cmd := app.Command(name)
	if cmd == nil || cmd.Hidden {
		return completion{kind: "words"}
	}
	l := parseLine(cmd, rest)
	switch {
	case l.pending != nil:
		return l.value(ctx, l.pending, "", cur)
	case l.flagsDone():
		return l.arg(ctx, cur)
	case strings.HasPrefix(cur, "-"):
		if name, val, ok := strings.Cut(strings.TrimLeft(cur, "-"), "="); ok {
			if f := lookupFlag(cmd.Flags, name); f != nil && takesValue(f) {
				return l.value(ctx, f, cur[:len(cur)-len(val)], val)
			}
			return completion{kind: "words"}
		}
		return words(cur, flagCandidates(cmd.Flags, l.seen))
	}
	// Flags when nothing is typed yet, unless the command's argument comes
	// first to mind (kill's run id); run's command once it is begun.
	if kind := argsOf[cmd.Name]; kind == 0 || kind == commandArg && cur == "" {
		return words(cur, flagCandidates(cmd.Flags, l.seen))
	}
	return l.arg(ctx, cur)
}

// cmdLine is what the words before the cursor say, read as tfhive does
// (flagsFirst, then urfave/cli): flags until "--", and for run and plan
// until their first argument, the task's command.
type cmdLine struct {
	cmd      *cli.Command
	values   map[string][]string // by the flag's first name
	seen     map[string]bool
	pending  cli.Flag // the last word is this flag, which wants a value
	args     []string
	dashdash bool
}

func parseLine(cmd *cli.Command, ws []string) *cmdLine {
	l := &cmdLine{cmd: cmd, values: map[string][]string{}, seen: map[string]bool{}}
	for _, w := range ws {
		switch {
		case l.pending != nil:
			name := l.pending.Names()[0]
			l.values[name] = append(l.values[name], w)
			l.pending = nil
		case l.flagsDone():
			l.args = append(l.args, w)
		case w == "--":
			l.dashdash = true
		case strings.HasPrefix(w, "-") && w != "-":
			name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := lookupFlag(cmd.Flags, name)
			if f == nil {
				continue
			}
			first := f.Names()[0]
			l.seen[first] = true
			switch {
			case hasVal:
				l.values[first] = append(l.values[first], val)
			case takesValue(f):
				l.pending = f
			}
		default:
			l.args = append(l.args, w)
		}
	}
	return l
}

// flagsDone says whether the words from here on are arguments whatever
// they look like.
func (l *cmdLine) flagsDone() bool {
	return l.dashdash || len(l.args) > 0 && argsAreTask(l.cmd)
}

func (l *cmdLine) last(name string) string {
	if v := l.values[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// hostOptions are the host flags as far as the line gives them, so that
// hosts and runs come from the fleet the command will use.
func (l *cmdLine) hostOptions() commands.HostOptions {
	file := l.last("hosts")
	if file == "" {
		file = os.Getenv("TFHIVE_HOSTS")
	}
	duration := func(name string) time.Duration {
		d, _ := time.ParseDuration(l.last(name))
		return d
	}
	parallel, _ := strconv.Atoi(l.last("parallel"))
	return commands.HostOptions{
		Hosts: l.values["host"], File: file, Hostfile: l.last("hostfile"), SSHConfig: l.last("ssh-config"),
		ConnectTimeout: duration("connect-timeout"), CommandTimeout: duration("command-timeout"), Parallel: parallel,
	}
}

// job is the tasks the line asks for, as far as it says (run's defaults
// otherwise); for attach -H, which learns them from the hosts, none.
func (l *cmdLine) job() commands.Job {
	if l.cmd.Name != "run" {
		return commands.Job{}
	}
	count := func(name string, def int) int {
		if n, err := strconv.Atoi(l.last(name)); err == nil {
			return n
		}
		return def
	}
	on := func(name string) bool { return l.seen[name] && l.last(name) != "false" }
	return commands.Job{PS: count("ps", 0), Workers: count("workers", schedule.DefaultWorkers), Chief: on("chief"), Evaluator: on("evaluator")}
}

// arg completes the command's next argument.
func (l *cmdLine) arg(ctx context.Context, cur string) completion {
	n := len(l.args)
	switch argsOf[l.cmd.Name] {
	case liveRunArg, anyRunArg:
		if n == 0 {
			return words(cur, commands.CompleteRuns(ctx, l.hostOptions(), argsOf[l.cmd.Name] == anyRunArg))
		}
	case shellArg:
		if n == 0 {
			var cands []commands.Candidate
			for _, sh := range commands.CompletionShells {
				cands = append(cands, commands.Candidate{Word: sh})
			}
			return words(cur, cands)
		}
	case commandArg:
		return completion{kind: "files"}
	}
	return completion{kind: "words"}
}

// value completes a flag's value; prefix is what the word keeps before it
// ("--hosts=").
func (l *cmdLine) value(ctx context.Context, f cli.Flag, prefix, cur string) completion {
	if fn := valuesOf[f.Names()[0]]; fn != nil {
		return fn(ctx, l, prefix, cur)
	}
	return completion{kind: "words"}
}

// hostValues completes -H: [user@]host, the last of a comma-separated
// list.
func hostValues(_ context.Context, l *cmdLine, prefix, cur string) completion {
	keep := prefix + cur[:strings.LastIndexByte(cur, ',')+1]
	part := cur[len(keep)-len(prefix):]
	if at := strings.LastIndexByte(part, '@'); at >= 0 {
		keep += part[:at+1]
	}
	return withPrefix(prefix+cur, keep, commands.CompleteHosts(l.hostOptions(), false))
}

// excludeValues completes --exclude with the hosts the line will use.
func excludeValues(_ context.Context, l *cmdLine, prefix, cur string) completion {
	return withPrefix(prefix+cur, prefix, commands.CompleteHosts(l.hostOptions(), true))
}

func pathValues(kind string) func(context.Context, *cmdLine, string, string) completion {
	return func(_ context.Context, _ *cmdLine, prefix, _ string) completion {
		return completion{kind: kind, prefix: prefix}
	}
}

func choices(list ...string) func(context.Context, *cmdLine, string, string) completion {
	return func(_ context.Context, _ *cmdLine, prefix, cur string) completion {
		var cands []commands.Candidate
		for _, c := range list {
			cands = append(cands, commands.Candidate{Word: c})
		}
		return withPrefix(prefix+cur, prefix, cands)
	}
}

// withPrefix puts keep before every candidate and keeps those that begin
// with word.
func withPrefix(word, keep string, cands []commands.Candidate) completion {
	for i := range cands {
		cands[i].Word = keep + cands[i].Word
	}
	return words(word, cands)
}

func commandCandidates(app *cli.App) []commands.Candidate {
	var cands []commands.Candidate
	for _, cmd := range app.Commands {
		if !cmd.Hidden && cmd.Name != "help" {
			cands = append(cands, commands.Candidate{Word: cmd.Name, Desc: cmd.Usage})
		}
	}
	return cands
}

// guideCandidates are the guides `tfhive help` prints, after the
// commands.
func guideCandidates() []commands.Candidate {
	var cands []commands.Candidate
	for _, t := range help.Topics() {
		cands = append(cands, commands.Candidate{Word: t.Name, Desc: t.Title})
	}
	return cands
}

// flagCandidates lists flags by every name, leaving out those seen on the
// line unless they may be repeated; --help is always there.
func flagCandidates(flags []cli.Flag, seen map[string]bool) []commands.Candidate {
	if lookupFlag(flags, "help") == nil {
		flags = append(flags, cli.HelpFlag)
	}
	var cands []commands.Candidate
	for _, f := range flags {
		if seen[f.Names()[0]] && !repeatable(f) {
			continue
		}
		usage := ""
		if d, ok := f.(cli.DocGenerationFlag); ok {
			usage = strings.ReplaceAll(d.GetUsage(), "`", "")
		}
		for _, name := range f.Names() {
			cands = append(cands, commands.Candidate{Word: dashed(name), Desc: usage})
		}
	}
	return cands
}

func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	d, ok := f.(cli.DocGenerationFlag)
	return ok && d.TakesValue()
}

func repeatable(f cli.Flag) bool {
	_, ok := f.(*cli.StringSliceFlag)
	return ok
}
