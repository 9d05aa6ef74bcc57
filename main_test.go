package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/launcher/cli"
	"github.com/tfhive/tfhive/launcher/commands"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/schedule"
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

// tfhive runs Main in-process, as the binary would run.
func tfhive(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(append([]string{"tfhive"}, args...), strings.NewReader(""), &out, &errb)
	stdout, stderr = out.String(), errb.String()
	for _, leak := range []string{"goroutine ", "panic:", "Incorrect Usage", "No help topic", "NAME:"} {
		if strings.Contains(stdout+stderr, leak) {
			t.Fatalf("%v: %q leaked:\nstdout:\n%s\nstderr:\n%s", args, leak, stdout, stderr)
		}
	}
	return code, stdout, stderr
}

// wantUsage checks exit 2 and exactly the error (and hint) lines given.
func wantUsage(t *testing.T, args []string, lines ...string) {
	t.Helper()
	code, stdout, stderr := tfhive(t, args...)
	want := strings.Join(lines, "\n") + "\n"
	if code != exitUsage || stderr != want || stdout != "" {
		t.Errorf("%q: exit %d (want 2)\nstderr:\n%s\nwant stderr:\n%s\nstdout (want none):\n%s", args, code, stderr, want, stdout)
	}
}

// silentHost listens where a host would be; untouched tells whether
// tfhive ever connected to it.
func silentHost(t *testing.T) (addr string, untouched func() bool) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String(), func() bool {
		// The kernel completes a connection tfhive made whether or not
		// anyone accepts it; a non-blocking accept finds it without
		// waiting for anything.
		rc, err := l.(*net.TCPListener).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		accepted := false
		rc.Control(func(fd uintptr) {
			if nfd, _, err := unix.Accept(int(fd)); err == nil {
				unix.Close(nfd)
				accepted = true
			}
		})
		return !accepted
	}
}

// closedPort is an address on which nothing listens: connections are
// refused at once.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestNegativeDurationsRefused(t *testing.T) {
	isolate(t)
	addr, untouched := silentHost(t)
	cases := []struct {
		args []string
		line string
	}{
		{[]string{"run", "--wait", "-5s"}, "tfhive: error: --wait must not be negative"},
		{[]string{"run", "--grace", "-1s"}, "tfhive: error: --grace must not be negative"},
		{[]string{"run", "--timeout", "-1s"}, "tfhive: error: --timeout must not be negative"},
		{[]string{"run", "--connect-timeout", "-1s"}, "tfhive: error: --connect-timeout must be positive"},
		{[]string{"plan", "--command-timeout", "0s"}, "tfhive: error: --command-timeout must be positive"},
		{[]string{"status", "--watch", "-1s"}, "tfhive: error: --watch must not be negative"},
		{[]string{"kill", "--grace", "-1s"}, "tfhive: error: --grace must not be negative"},
	}
	for _, c := range cases {
		// A short connect timeout bounds how long this test fails for when
		// a duration is checked too late; the case's own value comes last
		// and wins.
		args := append([]string{c.args[0], "--connect-timeout", "1s"}, c.args[1:]...)
		args = append(args, "-H", addr)
		switch c.args[0] {
		case "run", "plan":
			args = append(args, "--", "true")
		case "kill":
			args = append(args, "some-run")
		}
		wantUsage(t, args, c.line)
	}
	if !untouched() {
		t.Error("a host was contacted although a duration was refused")
	}
}

// Module names travel to the hosts: a bad one is refused first.
func TestImportsRefusedBeforeAnyHost(t *testing.T) {
	isolate(t)
	addr, untouched := silentHost(t)
	hint := "tfhive: hint: name a module as Python imports it, e.g. --import numpy or --import torch.distributed"
	wantUsage(t, []string{"doctor", "-H", addr, "--connect-timeout", "1s", "--import", "numpy", "--import", "os;id"},
		`tfhive: error: --import "os;id" is not a Python module name`, hint)
	wantUsage(t, []string{"run", "-H", addr, "--connect-timeout", "1s", "--check", "--import", "$(id)", "--", "true"},
		`tfhive: error: --import "$(id)" is not a Python module name`, hint)
	wantUsage(t, []string{"run", "-H", addr, "--connect-timeout", "1s", "--import", "numpy", "--", "true"},
		"tfhive: error: --import is for --check", "tfhive: hint: add --check, or see tfhive doctor --import")
	wantUsage(t, []string{"doctor", "-H", addr, "extra"}, `tfhive: error: unexpected argument "extra"`)
	if !untouched() {
		t.Error("a host was contacted although --import was refused")
	}
}

func TestLogDirRefusedBeforeAnyHost(t *testing.T) {
	dir := isolate(t)
	file := filepath.Join(dir, "file")
	full := filepath.Join(dir, "full")
	os.WriteFile(file, nil, 0o644)
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "worker-0.log"), nil, 0o644)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)

	type logCase struct {
		logDir string // "" for the default, tfhive-runs/RUN_ID
		lines  []string
	}
	cases := []logCase{
		{file, []string{"tfhive: error: log dir " + file + " is not a directory", "tfhive: hint: choose another --log-dir"}},
		{filepath.Join(file, "a", "b"), []string{"tfhive: error: log dir " + file + "/a/b cannot be created: " + file + " is not a directory", "tfhive: hint: choose another --log-dir"}},
		{full, []string{"tfhive: error: log dir " + full + " already exists and is not empty", "tfhive: hint: choose another --log-dir"}},
		{dangling, []string{"tfhive: error: log dir " + dangling + " cannot be created: " + dangling + " is a symbolic link to nothing", "tfhive: hint: choose another --log-dir"}},
	}
	// The default log dir goes through the same checks.
	defaultCase := func(setup func(), lines ...string) {
		t.Helper()
		os.RemoveAll("tfhive-runs")
		setup()
		addr, untouched := silentHost(t)
		wantUsage(t, []string{"run", "-H", addr, "--name", "r1", "--connect-timeout", "1s", "--", "true"}, lines...)
		if !untouched() {
			t.Error("default log dir: a host was contacted although the log dir was refused")
		}
	}
	defaultCase(func() { os.WriteFile("tfhive-runs", nil, 0o644) },
		"tfhive: error: log dir tfhive-runs/r1 cannot be created: tfhive-runs is not a directory",
		"tfhive: hint: give --log-dir DIR, or start tfhive in a directory you can write to")
	defaultCase(func() { os.MkdirAll("tfhive-runs/r1", 0o755); os.WriteFile("tfhive-runs/r1/plan.json", nil, 0o644) },
		"tfhive: error: log dir tfhive-runs/r1 already exists and is not empty",
		"tfhive: hint: choose another --name or --log-dir")
	os.RemoveAll("tfhive-runs")

	// Root writes through permission bits but not to a read-only file
	// system (or procfs); others are stopped by the bits.
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		cases = append(cases, logCase{filepath.Join(ro, "logs"), []string{"tfhive: error: log dir " + ro + "/logs cannot be created in " + ro + ": permission denied", "tfhive: hint: choose another --log-dir"}})
	} else if err := unix.Access("/proc/sys", unix.W_OK|unix.X_OK); err != nil {
		cases = append(cases, logCase{"/proc/sys/tfhive-logs", []string{"tfhive: error: log dir /proc/sys/tfhive-logs cannot be created in /proc/sys: " + err.Error(), "tfhive: hint: choose another --log-dir"}})
	} else {
		t.Log("no unwritable directory here to try as root")
	}

	for _, c := range cases {
		addr, untouched := silentHost(t)
		// A short connect timeout bounds how long this test fails for
		// when the log dir is checked too late.
		wantUsage(t, []string{"run", "-H", addr, "--log-dir", c.logDir, "--connect-timeout", "1s", "--", "true"}, c.lines...)
		if !untouched() {
			t.Errorf("--log-dir %s: a host was contacted although the log dir was refused", c.logDir)
		}
	}
}

func TestLogDirEmptyAcceptedAndNotCreatedEarly(t *testing.T) {
	dir := isolate(t)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	missing := filepath.Join(dir, "new", "logs")
	for _, logDir := range []string{empty, missing, ""} {
		args := []string{"run", "-H", closedPort(t), "--name", "r1", "--", "true"}
		if logDir != "" {
			args = append(args, "--log-dir", logDir)
		}
		// Every host refused: the log dir passed its checks, and the run
		// ended before any task, so it must not have been created.
		code, _, stderr := tfhive(t, args...)
		if code != exitUnreachable {
			t.Errorf("--log-dir %q: exit %d, want 4\n%s", logDir, code, stderr)
		}
	}
	for _, p := range []string{filepath.Join(dir, "new"), filepath.Join(dir, "tfhive-runs")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created by a run that started no task", p)
		}
	}
}

func TestEveryHostUnreachable(t *testing.T) {
	isolate(t)
	for _, cmd := range []string{"plan", "run"} {
		addr := closedPort(t)
		_, port, _ := net.SplitHostPort(addr)
		code, stdout, stderr := tfhive(t, cmd, "-H", addr, "--", "true")
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != exitUnreachable || len(lines) != 2 || stdout != "" {
			t.Fatalf("%s: exit %d, want 4 and two lines\nstderr:\n%s\nstdout:\n%s", cmd, code, stderr, stdout)
		}
		if want := "tfhive: error: 1 of 1 hosts could not be reached"; lines[0] != want {
			t.Errorf("%s: %q, want %q", cmd, lines[0], want)
		}
		// The reason is the probe's own, as status gives it; the host is
		// named with its port, as it was written.
		if want := "tfhive:   127.0.0.1:" + port + ": connection refused (127.0.0.1 port " + port + ")"; !strings.HasPrefix(lines[1], want) {
			t.Errorf("%s: %q, want it to begin %q", cmd, lines[1], want)
		}
	}
}

// TestExitCodes is the exit-code table of README.md, kind by kind: the
// packages only say what went wrong, main alone picks the code.
func TestExitCodes(t *testing.T) {
	run := func(code int) error {
		return &commands.RunFailedError{Summary: &record.Summary{RunID: "r", Result: record.ResultFailed, ExitCode: code}}
	}
	cases := []struct {
		err  error
		code int
	}{
		{nil, exitOK},
		{errors.New("boom"), exitFailure},
		{&commands.UsageError{Msg: "bad flag"}, exitUsage},
		{&hosts.ConfigError{Msg: "bad hosts file"}, exitUsage},
		{&schedule.UsageError{Msg: "bad request"}, exitUsage},
		{fmt.Errorf("hosts: %w", &hosts.ConfigError{Msg: "wrapped"}), exitUsage},
		{&schedule.CapacityError{Msg: "not enough free GPUs"}, exitNoGPUs},
		{&lifecycle.ClaimConflictError{Conflicts: []string{"a"}}, exitNoGPUs},
		{&lifecycle.QueuedSinceError{Hosts: []string{"a"}}, exitNoGPUs},
		{&lifecycle.ClaimBlockedError{Blocked: []string{"a"}}, exitNoGPUs},
		{&commands.UnreachableError{Bad: 1, Total: 2}, exitUnreachable},
		{&commands.DifferError{Problems: []doctor.Problem{{Host: "a", Item: "torch", Text: "a: torch 2.1"}}}, exitFailure},
		{&commands.CheckError{Problems: []doctor.Problem{{Host: "a", Item: "torch", Text: "a: torch 2.1"}}}, exitUsage},
		{run(9), 9},
		{run(record.TaskExitCode(7)), exitFailure},
		{run(record.TaskExitCode(2)), exitFailure},
		{run(record.TaskExitCode(3)), exitFailure},
		{run(record.TaskExitCode(127)), 127},
		{run(record.ExitTimeout), 124},
		{&commands.RunFailedError{Summary: &record.Summary{RunID: "r", Result: record.ResultHung, ExitCode: record.ExitHung}}, exitHung},
		{run(record.ExitHostLost), exitUnreachable},
		{run(130), exitInterrupted},
		{context.Canceled, exitInterrupted},
		{fmt.Errorf("probe: %w", context.Canceled), exitInterrupted},
		{cli.ErrTerminated, exitTerminated},
		{launcher.ErrStdoutClosed, 141},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.code {
			t.Errorf("exitCode(%T %v) = %d, want %d", c.err, c.err, got, c.code)
		}
	}
}

func TestReport(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{context.Canceled, "tfhive: error: interrupted\n"},
		{cli.ErrTerminated, "tfhive: error: interrupted by SIGTERM\n"},
		{&schedule.CapacityError{Msg: "not enough free GPUs", Fix: "wait", Lines: []string{"a: 1 free"}},
			"tfhive: error: not enough free GPUs\ntfhive:   a: 1 free\ntfhive: hint: wait\n"},
		{&commands.UnreachableError{Bad: 1, Total: 2, Lines: []string{"b: connection refused"}},
			"tfhive: error: 1 of 2 hosts could not be reached\ntfhive:   b: connection refused\n"},
		{&commands.RunFailedError{Summary: &record.Summary{RunID: "r1", Result: "failed", Reason: "worker:1 on gpu02 exited 9", ExitCode: 9}},
			"tfhive: error: run r1 failed: worker:1 on gpu02 exited 9\n"},
		{&commands.CheckError{Problems: []doctor.Problem{{Text: "b: torch 2.0, where 2 of 3 hosts have 2.1"}, {Text: "c: setup failed: false"}}},
			"tfhive: error: --check: b: torch 2.0, where 2 of 3 hosts have 2.1 (and 1 more)\n" +
				"tfhive:   b: torch 2.0, where 2 of 3 hosts have 2.1\ntfhive:   c: setup failed: false\n" +
				"tfhive: hint: tfhive doctor shows every host side by side; run without --check to start anyway\n"},
		// Said already, where it was said at all (run's stop).
		{launcher.ErrStdoutClosed, ""},
		// Whatever an error names (a path, a host's words), each line
		// stays one line, inert: control and bidi characters escaped.
		{&schedule.CapacityError{Msg: "bad\nline \x1b[2J", Fix: "fix\r\u202eit", Lines: []string{"a\tb\u2066"}},
			"tfhive: error: bad\\nline \\x1b[2J\ntfhive:   a\\tb\\u2066\ntfhive: hint: fix\\r\\u202eit\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		report(&b, c.err)
		if b.String() != c.want {
			t.Errorf("report(%v):\n%s\nwant:\n%s", c.err, b.String(), c.want)
		}
	}
}

// A command whose stdout's reader left ends quietly with 141 instead of
// dying of SIGPIPE: a real pipe, closed before tfhive writes.
func TestClosedStdoutEndsQuietly(t *testing.T) {
	isolate(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	for _, args := range [][]string{{"version"}, {"--help"}, {"runs", "--log-root", t.TempDir()}} {
		var errb bytes.Buffer
		code := Main(append([]string{"tfhive"}, args...), strings.NewReader(""), w, &errb)
		if code != exitStdoutClosed || errb.Len() != 0 {
			t.Errorf("%v: exit %d, want %d; stderr (want none):\n%s", args, code, exitStdoutClosed, errb.String())
		}
	}
}

// TestEmitProbesNothing: --emit reads no hosts file and contacts no host,
// whether hosts come from ./hosts.yaml or $TFHIVE_HOSTS.
func TestEmitProbesNothing(t *testing.T) {
	dir := isolate(t)
	addr, untouched := silentHost(t)
	hosts := "hosts:\n  - " + addr + "\n"
	os.WriteFile("hosts.yaml", []byte(hosts), 0o644)
	os.WriteFile(dir+"/other.yaml", []byte(hosts), 0o644)
	t.Setenv("TFHIVE_HOSTS", dir+"/other.yaml")
	for _, c := range []struct {
		args  []string
		first string
	}{
		{[]string{"plan", "--emit", "slurm", "--ps", "1", "--workers", "2", "--", "python", "train.py"}, "#!/bin/bash -l\n"},
		{[]string{"plan", "--emit", "tfjob", "--image", "ghcr.io/me/train:1", "--", "python", "train.py"}, "# tfhive run "},
		{[]string{"plan", "--emit", "pytorchjob", "--image", "pytorch/pytorch", "--workers", "2", "--", "python", "train.py"}, "# tfhive run "},
	} {
		code, stdout, stderr := tfhive(t, c.args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, c.first) {
			t.Errorf("%q: exit %d, stderr %q, stdout begins %.40q", c.args, code, stderr, stdout)
		}
	}
	if !untouched() {
		t.Error("--emit contacted a host")
	}
}

func TestEmitUsage(t *testing.T) {
	isolate(t)
	addr, untouched := silentHost(t)
	for _, c := range []struct {
		args  []string
		lines []string
	}{
		{[]string{"plan", "--emit", "slurm", "-H", addr, "--", "python"}, []string{
			"tfhive: error: --host has no counterpart in --emit slurm: the cluster manager places the tasks; nothing is probed",
			"tfhive: hint: drop --host; `tfhive help emit` maps every flag to each target"}},
		{[]string{"plan", "--emit", "tfjob", "--strategy", "pack", "--image", "x", "--", "python"}, []string{
			"tfhive: error: --strategy has no counterpart in --emit tfjob: the Kubernetes scheduler places the pods",
			"tfhive: hint: drop --strategy; `tfhive help emit` maps every flag to each target"}},
		{[]string{"plan", "--emit", "slurm", "--nic", "auto", "--", "python"}, []string{
			"tfhive: error: --nic has no counterpart in --emit slurm: the tasks reach each other by node or Service name; to pin NCCL or gloo to an interface, use --env NCCL_SOCKET_IFNAME=NAME --env GLOO_SOCKET_IFNAME=NAME",
			"tfhive: hint: drop --nic; `tfhive help emit` maps every flag to each target"}},
		{[]string{"plan", "--emit", "slurm", "--check", "--", "python"}, []string{
			"tfhive: error: flag provided but not defined: -check",
			"tfhive: hint: --check is not a flag of plan; run and sweep take it"}},
		{[]string{"plan", "--env", "A=1", "-H", addr, "--", "python"}, []string{
			"tfhive: error: --env only applies with --emit",
			"tfhive: hint: tfhive run takes it; plan takes it with --emit slurm, tfjob or pytorchjob"}},
		{[]string{"plan", "--emit", "tfjob", "--", "python"}, []string{
			"tfhive: error: --emit tfjob needs --image",
			"tfhive: hint: name the container image the pods run, e.g. --image ghcr.io/me/train:1.0"}},
		{[]string{"plan", "--emit", "nomad", "--", "python"}, []string{
			`tfhive: error: unknown --emit target "nomad"`,
			"tfhive: hint: use --emit slurm, --emit tfjob, --emit pytorchjob"}},
		{[]string{"plan", "--emit", "slurm", "--quiet", "--", "python"}, []string{
			"tfhive: error: flag provided but not defined: -quiet",
			"tfhive: hint: --quiet is not a flag of plan; run, rerun and sweep take it"}},
	} {
		wantUsage(t, c.args, c.lines...)
	}
	if !untouched() {
		t.Error("a refused --emit contacted a host")
	}
}

// report -o refuses what is not a regular file (a FIFO would block the
// open for good, past Ctrl-C; a device or a directory is no report), in
// one line and exit 2, before it reads the run; a new file or a regular
// one is written.
func TestReportOutputNotAFile(t *testing.T) {
	dir := isolate(t)
	run := filepath.Join(dir, "tfhive-runs", "r1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "plan.json"), []byte(`{"run_id": "r1", "tasks": [{"id": "worker:0", "host": "h"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"fifo", "link", "/dev/null", "tfhive-runs"} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			wantUsage(t, []string{"report", "r1", "-o", out}, "tfhive: error: -o "+out+": not a regular file",
				"tfhive: hint: -o - writes the report to stdout (tfhive report RUN -o - > PATH)")
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("report -o %s: still blocked after 10s", out)
		}
	}
	for _, out := range []string{"new.html", "new.html"} {
		if code, stdout, stderr := tfhive(t, "report", "r1", "-o", out); code != 0 || stdout != out+"\n" {
			t.Errorf("report -o %s: exit %d, stdout %q, stderr %q", out, code, stdout, stderr)
		}
	}
}

// A request far beyond any fleet (a typo's extra zeros) is refused in a
// line, before any host is touched and before anything is planned.
func TestRequestBoundedBeforeAnyHost(t *testing.T) {
	isolate(t)
	addr, untouched := silentHost(t)
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"--workers", "100000000"}, "tfhive: error: --workers must be at most 65536, got 100000000"},
		{[]string{"--ps", "70000"}, "tfhive: error: --ps must be at most 65536, got 70000"},
		{[]string{"--gpus-per-worker", "4096"}, "tfhive: error: --gpus-per-worker must be at most 1024, got 4096"},
		{[]string{"--framework", "torch", "--nnodes", "4096", "--nproc-per-node", "4096"},
			"tfhive: error: --nnodes 4096 --nproc-per-node 4096 is 16777216 ranks: at most 65536"},
	} {
		for _, verb := range []string{"plan", "run"} {
			args := append(append([]string{verb, "--connect-timeout", "1s", "-H", addr}, c.args...), "--", "true")
			done := make(chan struct{})
			go func() {
				defer close(done)
				wantUsage(t, args, c.line)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%q: still running after 20s", args)
			}
		}
	}
	if !untouched() {
		t.Error("a host was contacted although the request was refused")
	}
}

// A host given with a control or bidi character, or a name longer than
// a DNS name's 253 characters, is refused in one line that shows it
// escaped (and cut), exit 2, at once: a 100 KB name once took status
// 11 s and 1.7 GB.
func TestHostNamesBounded(t *testing.T) {
	isolate(t)
	long := strings.Repeat("a", 100_000)
	cut := `"` + strings.Repeat("a", 64) + `…"`
	for _, c := range []struct{ host, line string }{
		{"h1\nh2", `tfhive: error: -H "h1\nh2": host "h1\nh2": "h1\nh2" is not a host name or IP address`},
		{"h1\u202eh2", `tfhive: error: -H "h1\u202eh2": host "h1\u202eh2": "h1\u202eh2" is not a host name or IP address`},
		{long, "tfhive: error: -H " + cut + ": host " + cut + " (100000 characters): longer than a host name's 253"},
	} {
		start := time.Now()
		wantUsage(t, []string{"status", "--connect-timeout", "1s", "-H", c.host}, c.line)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%.20q: refused after %s", c.host, d)
		}
	}
}

// A sweep checks every trial's command before anything starts: a value
// that makes a bad placeholder in its trial's command is exit 2, naming
// the trial, with no host touched (it once failed that trial at run
// time, exit 1).
func TestSweepChecksEveryTrial(t *testing.T) {
	isolate(t)
	addr, untouched := silentHost(t)
	wantUsage(t, []string{"sweep", "--connect-timeout", "1s", "-H", addr, "--name", "sw", "--param", "x=a,{nope}", "--", "echo", "{x}"},
		"tfhive: error: trial sw-002 (x={nope}): unknown placeholder {nope} in command",
		"tfhive: hint: known placeholders: {job_name} {task_index} {ps_hosts} {worker_hosts} {chief_hosts} {cluster_spec} {tf_config} {run_id} {host} {port} {gpus} {rank} {world_size} {master_addr} {master_port} {code_dir}; write {{nope}} for a literal {nope}")
	if !untouched() {
		t.Error("a host was contacted although a trial's command was refused")
	}
	if _, err := os.Stat("tfhive-runs/sw"); err == nil {
		t.Error("the sweep's dir was made although a trial's command was refused")
	}
}

// --random N picks N trials of a grid larger than the 10,000 a sweep
// runs; the grid's own limit names --random only when it was not given.
func TestSweepRandomOfALargeGrid(t *testing.T) {
	isolate(t)
	var a, b []string
	for i := range 200 {
		a, b = append(a, "a"+strconv.Itoa(i)), append(b, "b"+strconv.Itoa(i))
	}
	pa, pb := "a="+strings.Join(a, ","), "b="+strings.Join(b, ",")
	code, stdout, stderr := tfhive(t, "plan", "--emit", "slurm", "--name", "sw", "--param", pa, "--param", pb, "--random", "3", "--seed", "5", "--", "echo", "{a}", "{b}")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "#SBATCH --array=0-2\n") || !strings.Contains(stdout, "3 trials: 3 combinations of a, b picked with --seed 5") {
		t.Errorf("--random 3 of a 40000-trial grid: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	wantUsage(t, []string{"plan", "--emit", "slurm", "--param", pa, "--param", pb, "--random", "20000", "--", "echo", "{a}", "{b}"},
		"tfhive: error: --random 20000: at most 10000 trials")
	wantUsage(t, []string{"plan", "--emit", "slurm", "--param", pa, "--param", pb, "--", "echo", "{a}", "{b}"},
		"tfhive: error: the grid has 40000 combinations, at most 10000; pick some with --random N")
}

// A log root that is there but is not a directory is bad input for every
// command that reads one: one line, exit 2, no host touched (top once
// showed no runs and exited 0).
func TestLogRootNotADirectory(t *testing.T) {
	isolate(t)
	addr, untouched := silentHost(t)
	for _, args := range [][]string{
		{"top", "--connect-timeout", "1s", "-H", addr, "--log-root", "/dev/zero"},
		{"runs", "--log-root", "/dev/zero"},
		{"runs", "--log-root", "/dev/zero", "--sweep", "sw"},
		{"report", "--log-root", "/dev/zero", "r1"},
	} {
		wantUsage(t, args, "tfhive: error: --log-root /dev/zero: not a directory",
			"tfhive: hint: --log-root names the directory that holds the runs' log dirs")
	}
	if err := os.WriteFile("tfhive-runs", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, []string{"runs"}, "tfhive: error: log root tfhive-runs: not a directory",
		"tfhive: hint: --log-root names the directory that holds the runs' log dirs")
	if !untouched() {
		t.Error("a host was contacted although the log root was refused")
	}
}
