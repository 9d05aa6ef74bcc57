package cli

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/commands"
	"github.com/tfhive/tfhive/launcher/rundir"
)

func TestFlagsFirst(t *testing.T) {
	var notFound error
	app := newApp(strings.NewReader(""), wiring{Streams: commands.Streams{Stdout: io.Discard, Stderr: io.Discard}}, &notFound)
	for _, c := range []struct{ in, want string }{
		// Flags, with their values, move before the arguments.
		{"logs RUN --task worker:1", "logs --task worker:1 RUN"},
		{"logs RUN --task=worker:1 -f", "logs --task=worker:1 -f RUN"},
		{"logs RUN -f --log-dir d", "logs -f --log-dir d RUN"},
		{"kill RUN --grace 5s -H h1,h2", "kill --grace 5s -H h1,h2 RUN"},
		{"kill RUN -H=h1", "kill -H=h1 RUN"},
		{"wait RUN --log-dir=d", "wait --log-dir=d RUN"},
		{"attach RUN --since 10", "attach --since 10 RUN"},
		// Bool flags take no next word: it stays an argument.
		{"logs -f RUN", "logs -f RUN"},
		{"logs --follow RUN2 RUN", "logs --follow RUN2 RUN"},
		{"logs RUN --follow=false", "logs --follow=false RUN"},
		// A value is the next word whatever it looks like, as package flag
		// takes it.
		{"logs RUN --task -f", "logs --task -f RUN"},
		{"logs RUN --task --", "logs --task -- RUN"},
		// "-" alone is an argument; "--" ends the flags.
		{"logs - --task w:0", "logs --task w:0 -"},
		{"logs RUN -- --task w:0", "logs RUN -- --task w:0"},
		{"logs --task w:0 -- RUN -f", "logs --task w:0 -- RUN -f"},
		{"logs RUN1 -f -- RUN2 --task x", "logs -f RUN1 -- RUN2 --task x"},
		// Unknown flags move too, so that the parser names them; they take
		// no value.
		{"logs RUN --nosuch x", "logs --nosuch RUN x"},
		{"status extra --json", "status --json extra"},
		// A value never given: the parser says it is missing.
		{"logs RUN --task", "logs --task"},
		{"kill RUN -H", "kill -H"},
		// Run's and plan's arguments are the task's command, from the
		// first on, with or without "--".
		{"run -H h1 -- cmd --task x", "run -H h1 -- cmd --task x"},
		{"run -H h1 python train.py --workers 2", "run -H h1 python train.py --workers 2"},
		{"plan cmd -H h1", "plan cmd -H h1"},
		// The root's flags, help, no command, an unknown word, completion.
		{"--help logs RUN -f", "--help logs -f RUN"},
		{"help logs -f", "help logs -f"},
		{"nosuch RUN -f", "nosuch RUN -f"},
		{"__complete logs RUN --ta", "__complete logs RUN --ta"},
		{"", ""},
		{"logs", "logs"},
	} {
		in := append([]string{"tfhive"}, strings.Fields(c.in)...)
		got := flagsFirst(app, in)
		if want := append([]string{"tfhive"}, strings.Fields(c.want)...); !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", c.in, got[1:], want[1:])
		}
	}
}

// isolateLocal is isolate without TFHIVE_HOSTS at all: set, even empty,
// it is --hosts, and logs and attach would read the hosts.
func isolateLocal(t *testing.T) {
	isolate(t)
	os.Unsetenv("TFHIVE_HOSTS") // isolate's t.Setenv puts it back
}

// logRun writes a finished run's summary in tfhive-runs/id.
func logRun(t *testing.T, id, started string, files ...string) {
	t.Helper()
	dir := filepath.Join("tfhive-runs", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	summary := `{"run_id":"` + id + `","started":"` + started + `","result":"failed","exit_code":3}`
	if err := os.WriteFile(filepath.Join(dir, rundir.Summary), []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(id+" "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFlagsAfterRunID(t *testing.T) {
	isolateLocal(t)
	logRun(t, "r1", "2026-01-01T10:00:00Z", "worker-1.log", "console.log")
	for _, args := range [][]string{
		{"logs", "r1", "--task", "worker:1"},
		{"logs", "--task", "worker:1", "r1"},
		{"logs", "r1", "--task=worker:1"},
	} {
		err, stdout, stderr := tfhive(t, args...)
		if err != nil || stdout != "r1 worker-1.log\n" || stderr != "" {
			t.Errorf("%q: %v, stdout %q, stderr %q", args, err, stdout, stderr)
		}
	}
	wantUsage(t, []string{"logs", "r1", "--task"}, "tfhive: error: flag --task needs a value", "tfhive: hint: see `tfhive logs --help`")
	wantUsage(t, []string{"logs", "r1", "--tsak", "worker:1"}, "tfhive: error: flag provided but not defined: -tsak", "tfhive: hint: did you mean --task?")
	wantUsage(t, []string{"logs", "r1", "r2", "-f"}, `tfhive: error: logs takes one run id; unexpected argument "r2"`,
		"tfhive: hint: tfhive ps lists the runs holding GPUs; tfhive runs lists this directory's")
	wantUsage(t, []string{"kill", "r1", "--grace", "x"}, `tfhive: error: invalid value "x" for --grace`,
		"tfhive: hint: --grace takes a duration such as 500ms, 10s, 2m or 1h30m")
}

func TestLatestRun(t *testing.T) {
	isolateLocal(t)
	wantErr := func(args ...string) {
		t.Helper()
		err, stdout, stderr := tfhive(t, args...)
		want := "tfhive: error: no run in tfhive-runs here to take as the latest\n" +
			"tfhive: hint: give a run id (tfhive ps lists the runs holding GPUs), or --log-dir\n"
		var none *commands.NoRunError
		if !errors.As(err, &none) || stdout != "" || stderr != want {
			t.Errorf("%q: %v, stdout %q, stderr %q", args, err, stdout, stderr)
		}
	}
	wantErr("logs")
	wantErr("wait")
	// The latest by the start the summaries record, not by name or by
	// the directory's mtime: b started last, though c was written last.
	logRun(t, "b", "2026-01-02T10:00:00Z", "console.log")
	logRun(t, "a", "2026-01-01T10:00:00Z", "console.log")
	logRun(t, "c", "2025-12-31T10:00:00Z", "console.log", "worker-0.log")
	for _, c := range []struct {
		args           []string
		stdout, stderr string
	}{
		{[]string{"logs"}, "b console.log\n", "tfhive: logs of b (the latest)\n"},
		{[]string{"logs", "-f"}, "b console.log\n", "tfhive: logs of b (the latest)\n"},
		{[]string{"logs", "--task", "worker:0", "c"}, "c worker-0.log\n", ""},
		{[]string{"logs", "--log-dir", "tfhive-runs/c", "--task", "worker:0"}, "c worker-0.log\n", ""},
	} {
		err, stdout, stderr := tfhive(t, c.args...)
		if err != nil || stdout != c.stdout || stderr != c.stderr {
			t.Errorf("%q: %v, stdout %q (want %q), stderr %q (want %q)", c.args, err, stdout, c.stdout, stderr, c.stderr)
		}
	}
	// wait and attach end with the run's result: b failed with 3.
	for _, c := range []struct{ cmd, stdout, said string }{
		{"wait", "", "tfhive: waiting for b (the latest)\n"},
		{"attach", "b console.log\n", "tfhive: attaching to b (the latest)\n"},
	} {
		err, stdout, stderr := tfhive(t, c.cmd)
		var failed *commands.RunFailedError
		if !errors.As(err, &failed) || failed.Summary.ExitCode != 3 || stdout != c.stdout || !strings.HasPrefix(stderr, c.said) {
			t.Errorf("%s: %v, stdout %q, stderr %q", c.cmd, err, stdout, stderr)
		}
	}
	for _, cmd := range []string{"logs", "attach"} {
		wantUsage(t, []string{cmd, "-H", "h1"}, "tfhive: error: with -H or --hosts (or $TFHIVE_HOSTS), give the run id",
			"tfhive: hint: the run is the hosts': tfhive ps lists the runs holding GPUs there")
	}
}
