package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// isolate keeps the user's hosts file, ssh config, agent and working
// directory out of a test: no host is used unless the test names it.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("TFHIVE_HOSTS", "")
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
		{[]string{"help", "plna"}, []string{`tfhive: error: unknown command "plna"`, `tfhive: hint: did you mean "plan"?`}},
		{[]string{"--help", "nosuch"}, []string{`tfhive: error: unknown command "nosuch"`}},
		{[]string{"status", "--help", "extra"}, []string{`tfhive: error: unexpected argument "extra"`, "tfhive: hint: see `tfhive status --help`"}},
		{[]string{"help", "status", "extra"}, []string{`tfhive: error: unexpected argument "extra"`, "tfhive: hint: see `tfhive --help`"}},
		{[]string{"version", "extra"}, []string{`tfhive: error: unexpected argument "extra"`}},
	}
	for _, c := range cases {
		wantUsage(t, c.args, c.lines...)
	}
}

// help is not listed as a command but works, on stdout, exit 0.
func TestHelp(t *testing.T) {
	isolate(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "COMMANDS:"},
		{[]string{"help", "status"}, "tfhive status - show every GPU"},
		{[]string{"status", "--help"}, "tfhive status - show every GPU"},
	} {
		var out, errb bytes.Buffer
		code := Main(append([]string{"tfhive"}, c.args...), strings.NewReader(""), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), c.want) || errb.Len() != 0 {
			t.Errorf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", c.args, code, out.String(), errb.String())
		}
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
		// The reason is the probe's own, as status gives it.
		if want := "tfhive:   127.0.0.1: connection refused (127.0.0.1 port " + port + ")"; !strings.HasPrefix(lines[1], want) {
			t.Errorf("%s: %q, want it to begin %q", cmd, lines[1], want)
		}
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
