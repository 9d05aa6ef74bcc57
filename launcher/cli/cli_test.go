package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/commands"
	"github.com/tfhive/tfhive/launcher/help"
	"github.com/tfhive/tfhive/launcher/record"
)

// isolate keeps the user's hosts file, ssh config, agent and working
// directory out of a test: no host is used unless the test names it.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("TFHIVE_HOSTS", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Chdir(dir)
	return dir
}

// tfhive runs Run in-process, as the binary would, and reports its error
// on stderr as package main does. The exit code is main's to pick (its
// tests hold the table): err is what it is picked from.
func tfhive(t *testing.T, args ...string) (err error, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	err = Run(append([]string{"tfhive"}, args...), strings.NewReader(""), &out, &errb)
	Report(&errb, err, false)
	stdout, stderr = out.String(), errb.String()
	for _, leak := range []string{"goroutine ", "panic:", "Incorrect Usage", "No help topic", "NAME:"} {
		if strings.Contains(stdout+stderr, leak) {
			t.Fatalf("%v: %q leaked:\nstdout:\n%s\nstderr:\n%s", args, leak, stdout, stderr)
		}
	}
	return err, stdout, stderr
}

// wantUsage checks a usage error (exit 2: main's TestExitCodes) and
// exactly the error (and hint) lines given.
func wantUsage(t *testing.T, args []string, lines ...string) {
	t.Helper()
	err, stdout, stderr := tfhive(t, args...)
	want := strings.Join(lines, "\n") + "\n"
	var usage *commands.UsageError
	if !errors.As(err, &usage) || stderr != want || stdout != "" {
		t.Errorf("%q: error %T (want a usage error, exit 2)\nstderr:\n%s\nwant stderr:\n%s\nstdout (want none):\n%s", args, err, stderr, want, stdout)
	}
}

func TestUnknownCommand(t *testing.T) {
	isolate(t)
	cases := []struct {
		args  []string
		lines []string
	}{
		{[]string{"nosuch"}, []string{`tfhive: error: unknown command "nosuch"`}},
		{[]string{"statsu"}, []string{`tfhive: error: unknown command "statsu"`, `tfhive: hint: did you mean "status"?`}},
		{[]string{"stat", "-H", "x"}, []string{`tfhive: error: unknown command "stat"`, `tfhive: hint: did you mean "status"?`}},
		{[]string{"kil"}, []string{`tfhive: error: unknown command "kil"`, `tfhive: hint: did you mean "kill"?`}},
		{[]string{"x"}, []string{`tfhive: error: unknown command "x"`}},
		{[]string{"help", "plna"}, []string{`tfhive: error: unknown command or guide "plna"`, `tfhive: hint: did you mean "plan"?`}},
		{[]string{"help", "host"}, []string{`tfhive: error: unknown command or guide "host"`, `tfhive: hint: did you mean "hosts"?`}},
		{[]string{"help", "nosuch"}, []string{`tfhive: error: unknown command or guide "nosuch"`, "tfhive: hint: `tfhive help` lists the commands and the guides"}},
		{[]string{"help", "hosts", "extra"}, []string{`tfhive: error: unexpected argument "extra"`, "tfhive: hint: see `tfhive --help`"}},
		{[]string{"--help", "nosuch"}, []string{`tfhive: error: unknown command or guide "nosuch"`, "tfhive: hint: `tfhive help` lists the commands and the guides"}},
		{[]string{"status", "--help", "extra"}, []string{`tfhive: error: unexpected argument "extra"`, "tfhive: hint: see `tfhive status --help`"}},
		{[]string{"help", "status", "extra"}, []string{`tfhive: error: unexpected argument "extra"`, "tfhive: hint: see `tfhive --help`"}},
		{[]string{"version", "extra"}, []string{`tfhive: error: unexpected argument "extra"`}},
	}
	for _, c := range cases {
		wantUsage(t, c.args, c.lines...)
	}
}

// help is not listed as a command but works, on stdout, exit 0; it lists
// the guides after the commands, and prints one by name.
func TestHelp(t *testing.T) {
	isolate(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "COMMANDS:"},
		{[]string{"help"}, "\nGUIDES (tfhive help TOPIC):\n   hosts "},
		{[]string{"--help"}, "\nGUIDES (tfhive help TOPIC):\n"},
		{[]string{"help", "status"}, "tfhive status - show every GPU"},
		{[]string{"status", "--help"}, "tfhive status - show every GPU"},
		{[]string{"help", "hosts"}, "# Hosts: the hosts file"},
		{[]string{"--help", "hosts"}, "# Hosts: the hosts file"},
	} {
		var out, errb bytes.Buffer
		err := Run(append([]string{"tfhive"}, c.args...), strings.NewReader(""), &out, &errb)
		if err != nil || !strings.Contains(out.String(), c.want) || errb.Len() != 0 {
			t.Errorf("%q: %v\nstdout:\n%s\nstderr:\n%s", c.args, err, out.String(), errb.String())
		}
	}
	// Every guide is listed, in order, with its title; `help NAME` prints
	// it as its file has it.
	var out bytes.Buffer
	Run([]string{"tfhive", "help"}, strings.NewReader(""), &out, &out)
	_, list, _ := strings.Cut(out.String(), "GUIDES (tfhive help TOPIC):\n")
	width := 0
	for _, tp := range help.Topics() {
		width = max(width, len(tp.Name))
	}
	var lines []string
	for _, tp := range help.Topics() {
		lines = append(lines, fmt.Sprintf("   %-*s  %s", width, tp.Name, tp.Title))
	}
	if want := strings.Join(lines, "\n") + "\n"; list != want {
		t.Errorf("tfhive help lists the guides as\n%s\nwant\n%s", list, want)
	}
	for _, name := range help.Names() {
		text, _ := help.Guide(name)
		err, stdout, stderr := tfhive(t, "help", name)
		if err != nil || stdout != text || stderr != "" {
			t.Errorf("help %s: %v, stderr %q; stdout is the guide: %v", name, err, stderr, stdout == text)
		}
	}
	// A guide named as a command would never be shown.
	app := newApp(nil, wiring{}, new(error))
	for _, name := range help.Names() {
		if app.Command(name) != nil || name == "help" {
			t.Errorf("guide %s has a command's name: tfhive help %s shows the command", name, name)
		}
	}
	if err, stdout, _ := tfhive(t, "help", "hosts"); err != nil || !strings.HasPrefix(stdout, "# Hosts: ") ||
		!strings.Contains(stdout, "hosts.example.yaml") || !strings.Contains(stdout, "--accept-new-host-keys") {
		t.Errorf("tfhive help hosts: %v\n%s", err, stdout)
	}
}

func TestFlagErrors(t *testing.T) {
	isolate(t)
	cases := []struct {
		args  []string
		lines []string
	}{
		{[]string{"status", "--jsn"}, []string{"tfhive: error: flag provided but not defined: -jsn", "tfhive: hint: did you mean --json?"}},
		{[]string{"status", "--nosuch"}, []string{"tfhive: error: flag provided but not defined: -nosuch", "tfhive: hint: see `tfhive status --help`"}},
		{[]string{"--nosuch"}, []string{"tfhive: error: flag provided but not defined: -nosuch", "tfhive: hint: see `tfhive --help`"}},
		{[]string{"-H", "gpu01", "status"}, []string{"tfhive: error: flag provided but not defined: -H", "tfhive: hint: -H is a command's flag: put it after the command name"}},
		{[]string{"version", "--nosuch"}, []string{"tfhive: error: flag provided but not defined: -nosuch", "tfhive: hint: see `tfhive version --help`"}},
		{[]string{"status", "--parallel"}, []string{"tfhive: error: flag --parallel needs a value", "tfhive: hint: see `tfhive status --help`"}},
		{[]string{"run", "-H"}, []string{"tfhive: error: flag -H needs a value", "tfhive: hint: see `tfhive run --help`"}},
		{[]string{"status", "--parallel", "many"}, []string{`tfhive: error: invalid value "many" for --parallel`, "tfhive: hint: --parallel takes a whole number"}},
		{[]string{"run", "--wait", "soon", "--", "x"}, []string{`tfhive: error: invalid value "soon" for --wait`, "tfhive: hint: --wait takes a duration such as 500ms, 10s, 2m or 1h30m"}},
		{[]string{"status", "--json=maybe"}, []string{`tfhive: error: invalid value "maybe" for --json`, "tfhive: hint: --json takes no value, or =true / =false"}},
		{[]string{"status", "-H", "a", "--host", "b"}, []string{"tfhive: error: --host and -H are the same flag", "tfhive: hint: use one of them"}},
		// Another command's flag says whose it is.
		{[]string{"status", "--workers", "2"}, []string{"tfhive: error: flag provided but not defined: -workers", "tfhive: hint: --workers is not a flag of status; plan, run and sweep take it"}},
		{[]string{"sweep", "--emit", "slurm", "--param", "a=1", "--", "x"}, []string{"tfhive: error: flag provided but not defined: -emit", "tfhive: hint: a sweep's Slurm job array is `tfhive plan --emit slurm --param NAME=V1,V2,… -- COMMAND`"}},
	}
	for _, c := range cases {
		wantUsage(t, c.args, c.lines...)
	}
}

func TestClosest(t *testing.T) {
	cmds := []string{"status", "plan", "run", "ps", "kill", "version"}
	for word, want := range map[string]string{
		"statsu": "status", "stauts": "status", "stat": "status", "rnu": "run", "pss": "ps",
		"kil": "kill", "ver": "version", "nosuch": "", "x": "", "p": "", "deploy": "",
	} {
		if got := closest(word, cmds); got != want {
			t.Errorf("closest(%q) = %q, want %q", word, got, want)
		}
	}
	if d := editDistance("ab", "ba"); d != 1 {
		t.Errorf("a swap of neighbours counts %d edits, want 1", d)
	}
}

// Once stdout closed, what the closing caused ends quietly with 141;
// errors of their own still speak.
func TestAfterStdoutClosed(t *testing.T) {
	run := func(result string, code int) error {
		return &commands.RunFailedError{Summary: &record.Summary{RunID: "r", Result: result, ExitCode: code}}
	}
	failed := run(record.ResultFailed, 9)
	unreachable := &commands.UnreachableError{Bad: 1, Total: 2}
	for _, c := range []struct {
		err, want error
	}{
		{nil, launcher.ErrStdoutClosed},
		{&os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}, launcher.ErrStdoutClosed},
		{fmt.Errorf("probe: %w", context.Canceled), launcher.ErrStdoutClosed},
		{run(record.ResultStdoutClosed, record.ExitStdoutClosed), launcher.ErrStdoutClosed},
		{launcher.ErrStdoutClosed, launcher.ErrStdoutClosed},
		{failed, failed},
		{unreachable, unreachable},
	} {
		if got := afterStdoutClosed(c.err); got != c.want {
			t.Errorf("afterStdoutClosed(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// torchrun's --nnodes and --nproc-per-node map onto --framework torch;
// elsewhere they are refused before any host is touched, naming tfhive's
// words.
func TestTorchrunFlags(t *testing.T) {
	isolate(t)
	need := "tfhive: error: --nnodes and --nproc-per-node are torchrun's: they need --framework torch"
	wantUsage(t, []string{"run", "--nnodes", "2", "--nproc-per-node", "4", "--", "x"}, need,
		"tfhive: hint: add --framework torch, or give --workers 8")
	wantUsage(t, []string{"plan", "--nproc-per-node", "4", "--", "x"}, need, "tfhive: hint: add --framework torch, or give --workers 4")
	wantUsage(t, []string{"run", "--framework", "torch", "--nnodes", "2", "--workers", "3", "--", "x"},
		"tfhive: error: --workers and --nnodes/--nproc-per-node both count the ranks; give one",
		"tfhive: hint: --nnodes 2 --nproc-per-node 1 is 2 ranks")
	wantUsage(t, []string{"run", "--framework", "torch", "--nnodes", "0", "--", "x"},
		"tfhive: error: --nnodes 0 --nproc-per-node 1: each must be 1 to 4096")
	// The request's own check (schedule.UsageError, exit 2 too).
	_, _, stderr := tfhive(t, "run", "--framework", "torch", "--nproc-per-node", "2", "--strategy", "spread", "--", "x")
	if want := "tfhive: error: --nproc-per-node cannot be used with --strategy spread\n" +
		"tfhive: hint: --nproc-per-node fills each host it uses; leave --strategy out\n"; stderr != want {
		t.Errorf("--strategy spread with --nproc-per-node:\n%s", stderr)
	}
}

// gc's --older-than is told given, 0 included, from not given (the
// default: a week of run files): 0s once meant that week.
func TestGCOlderThanGiven(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" : not given
	}{{nil, ""}, {[]string{"--older-than", "0s"}, "0s"}, {[]string{"--older-than", "2h"}, "2h0m0s"}} {
		var got commands.GCOptions
		app := &cli.App{Commands: []*cli.Command{{Name: "gc", Flags: join(hostFlags(), gcFlags()),
			Action: func(c *cli.Context) error { got, _ = wiring{}.gc(c); return nil }}}}
		if err := app.Run(append([]string{"tfhive", "gc"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && got.OlderThan != nil:
			t.Errorf("%q: --older-than %s, want not given", c.args, *got.OlderThan)
		case c.want != "" && (got.OlderThan == nil || got.OlderThan.String() != c.want):
			t.Errorf("%q: --older-than %v, want %s", c.args, got.OlderThan, c.want)
		}
	}
}
