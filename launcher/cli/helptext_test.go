package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// helpOf is the help args print, on stdout with no error.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := Run(append([]string{"tfhive"}, args...), strings.NewReader(""), &out, &errb); err != nil || errb.Len() > 0 || out.Len() == 0 {
		t.Fatalf("%q: %v, stderr %q", args, err, errb.String())
	}
	return out.String()
}

// Every help fits helpWidth columns, names each value by a placeholder of
// its own, and prints no zero as a default.
func TestHelpFits(t *testing.T) {
	isolate(t)
	app := newApp(strings.NewReader(""), wiring{}, new(error))
	helps := [][]string{{"--help"}}
	for _, cmd := range app.Commands {
		if !cmd.Hidden {
			helps = append(helps, []string{cmd.Name, "--help"})
		}
	}
	zero := regexp.MustCompile(`\(default: (0|0s|false|""|\[\])\)`)
	for _, args := range helps {
		stdout := helpOf(t, args...)
		for _, line := range strings.Split(stdout, "\n") {
			if n := utf8.RuneCountInString(line); n > helpWidth {
				t.Errorf("%q: a line of %d columns:\n%s", args, n, line)
			}
			if entry := strings.SplitN(strings.TrimSpace(line), "  ", 2)[0]; strings.HasPrefix(line, "   -") && strings.HasSuffix(entry, " value") {
				t.Errorf("%q: a placeholder says value:\n%s", args, line)
			}
			if zero.MatchString(line) {
				t.Errorf("%q: a zero default:\n%s", args, line)
			}
		}
	}
}

// run --help: the groups in order, the job's first, --workers its first
// flag, and the hosts and SSH flags last but for --help.
func TestRunHelpGroups(t *testing.T) {
	isolate(t)
	stdout := helpOf(t, "run", "--help")
	var headings []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasSuffix(line, ":") && line == strings.ToUpper(line) {
			headings = append(headings, line)
		}
	}
	want := "NAME: USAGE: JOB: PLACEMENT: RUN CONTROL: OUTPUT: SLURM (--ON SLURM): HOSTS AND SSH: OPTIONS:"
	if got := strings.Join(headings, " "); got != want {
		t.Errorf("run --help's headings: %s\nwant %s", got, want)
	}
	_, job, _ := strings.Cut(stdout, "\nJOB:\n")
	if !strings.HasPrefix(job, "   --workers N ") {
		t.Errorf("run --help: the job's first flag is not --workers:\n%s", job)
	}
	workers, host := strings.Index(stdout, "--workers"), strings.Index(stdout, "-H, --host [user@]host[:port] ")
	if workers < 0 || host < 0 || workers > host || strings.Index(stdout, "--connect-timeout D") < workers {
		t.Errorf("run --help: --workers (at %d) is not before -H (at %d) and the SSH flags:\n%s", workers, host, stdout)
	}
	for _, entry := range []string{
		"   --workers N ", "   --name ID ", "   --reconnect D ", "(default: 5m)", "(default: 24h)",
		"   -d, --detach ", "   --hosts FILE ", "[$TFHIVE_HOSTS]",
	} {
		if !strings.Contains(stdout, entry) {
			t.Errorf("run --help has no %q:\n%s", entry, stdout)
		}
	}
	// A zero default is not printed: --timeout's 0 is no limit.
	if _, timeout, _ := strings.Cut(stdout, "--timeout D"); strings.Contains(strings.SplitN(timeout, "\n", 2)[0], "default") {
		t.Errorf("run --help prints --timeout's zero default: %q", timeout)
	}
}

// A flag of a category help does not know yet is listed after the known
// ones, under its own heading; one of none under OPTIONS; a long entry
// has its description below it.
func TestFlagHelpGeneric(t *testing.T) {
	got := flagHelp([]cli.Flag{
		&cli.StringFlag{Name: "color", Category: "display", Usage: "`WHEN` to colour: auto, always or never", Value: "auto"},
		&cli.IntFlag{Name: "workers", Category: catJob, Usage: "`N` workers"},
		&cli.BoolFlag{Name: "json", Usage: "JSON"},
		&cli.StringFlag{Name: "a-very-long-flag-name-indeed", Usage: "`PLACEHOLDER` " + strings.Repeat("word ", 30)},
		cli.HelpFlag,
	})
	want := `
OPTIONS:
   --json        JSON
   --a-very-long-flag-name-indeed PLACEHOLDER
                 PLACEHOLDER word word word word word word word word word word word word word word
                 word word word word word word word word word word word word word word word word
   -h, --help    show help

JOB:
   --workers N   N workers

DISPLAY:
   --color WHEN  WHEN to colour: auto, always or never (default: auto)
`
	if got != want {
		t.Errorf("flagHelp:\n%s\nwant:\n%s", got, want)
	}
}
