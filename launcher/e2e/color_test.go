package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// On a terminal, status colours its states and run its task prefixes;
// NO_COLOR (or TERM=dumb, or --color never) leaves no colour code, and
// --color beats NO_COLOR. Off a terminal nothing is coloured unless
// --color always; a bad --color is one line and exit 2.
func TestColorOnTerminal(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "c1", GPU: "idle-2gpu.xml"})
	status := func(env []string, extra ...string) string {
		t.Helper()
		code, out := startOnTerminal(t, f, env, fleetArgs(f, append([]string{"status"}, extra...)...)...).end(t)
		if code != 0 {
			t.Fatalf("status %v: exit %d\n%q", env, code, out)
		}
		return out
	}
	if out := status([]string{"TERM=xterm-256color"}); !strings.Contains(out, "\x1b[32mfree\x1b[0m") {
		t.Errorf("status on a terminal: no green free:\n%q", out)
	}
	for _, c := range []struct {
		env   []string
		extra []string
	}{
		{[]string{"TERM=xterm-256color", "NO_COLOR=1"}, nil},
		{[]string{"TERM=dumb"}, nil},
		{[]string{"TERM=xterm"}, []string{"--color", "never"}},
		{[]string{"TERM=xterm"}, []string{"--json"}},
	} {
		if out := status(c.env, c.extra...); strings.Contains(out, "\x1b") || !strings.Contains(out, "free") {
			t.Errorf("status %v %v on a terminal: want no escape:\n%q", c.env, c.extra, out)
		}
	}
	if out := status([]string{"TERM=xterm", "NO_COLOR=1"}, "--color", "always"); !strings.Contains(out, "\x1b[32mfree\x1b[0m") {
		t.Errorf("--color always under NO_COLOR: no colour:\n%q", out)
	}

	// Off a terminal.
	r := tfhive(t, append(f.Env(), "TERM=xterm"), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("status into a pipe has colour:\n%q", r.stdout)
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--color", "always")...)
	wantContains(t, "status --color always into a pipe", r.stdout, "\x1b[32mfree\x1b[0m")
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--color", "sometimes")...)
	wantCode(t, r, 2)
	if r.stderr != "tfhive: error: --color \"sometimes\": want auto, always or never\n" {
		t.Errorf("bad --color: %q", r.stderr)
	}

	// run's task prefixes.
	run := func(env ...string) string {
		t.Helper()
		args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--", "echo", "hello")
		code, out := startOnTerminal(t, f, env, args...).end(t)
		if code != 0 || !strings.Contains(out, " hello\r\n") {
			t.Fatalf("run %v: exit %d\n%q", env, code, out)
		}
		return out
	}
	if out := run("TERM=xterm"); !strings.Contains(out, "\x1b[36m[worker:0 c1]\x1b[0m hello") {
		t.Errorf("run on a terminal: no coloured prefix:\n%q", out)
	}
	if out := run("TERM=xterm", "NO_COLOR=1"); strings.Contains(out, "\x1b") {
		t.Errorf("run under NO_COLOR on a terminal: want no escape:\n%q", out)
	}
}

// run --wait on a terminal says why it waits on one line, redrawn in
// place (its place in the queue, the time left), however long it waits:
// no line a retry, no "probing hosts" line either.
func TestWaitLineOnTerminal(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "t1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "t2", GPU: "idle-2gpu.xml", AliveInterval: 1})
	release := filepath.Join(t.TempDir(), "release")
	first, _ := runArgs(t, f, "--name", "holder", "--workers", "4", "--", "sh", "-c",
		`echo started; while [ ! -e "$0" ]; do sleep 0.1; done`, release)
	holder, herr := startRun(t, f, first...)
	waitForClaims(t, f, 4)

	args, logDir := runArgs(t, f, "--name", "waiter", "--wait", "1m", "--workers", "2", "--", "true")
	w := startOnTerminal(t, f, []string{"TERM=xterm"}, args...)
	w.waitFor(t, "tfhive: waiting for 2 GPUs", 30*time.Second)
	// Some retries (a probe a second at most, sooner at first): the line
	// redrawn for each, waited for rather than slept on.
	redraw := "\r\x1b[Ktfhive: waiting for 2 GPUs (0 free now): 1st in the queue; "
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(w.output(), redraw) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the waiting line was not redrawn 3 times in 30s:\n%q", w.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := w.end(t)
	if code != 0 {
		t.Fatalf("waiter: exit %d\n%q", code, out)
	}
	waited, _, ok := strings.Cut(out, "tfhive: waited ")
	if !ok {
		t.Fatalf("no \"tfhive: waited\" line:\n%q", out)
	}
	if n := strings.Count(waited, "\n"); n > 3 {
		t.Errorf("%d lines while waiting, want at most 3:\n%q", n, waited)
	}
	if n := strings.Count(waited, "\r\x1b[Ktfhive: waiting for 2 GPUs (0 free now): 1st in the queue; "); n < 3 {
		t.Errorf("the line was drawn %d times, want one a retry:\n%q", n, waited)
	}
	wantContains(t, "waiter", waited, "left of --wait 1m")
	// The first probe draws its progress line; the wait's probes none.
	if _, during, _ := strings.Cut(waited, "tfhive: waiting"); strings.Contains(during, "probing hosts") {
		t.Errorf("a probing line while waiting:\n%q", waited)
	}
	if s := summaryOf(t, logDir); s.Result != "succeeded" {
		t.Errorf("waiter: %+v", s)
	}
	if err := holder.Wait(); err != nil {
		t.Errorf("holder: %v\n%s", err, herr.String())
	}
}
